"""Well-known cluster addresses, written once: kubeadm's defaults, which a cluster profile's
``addressing`` overrides (``helmsim.cluster.profile.Addressing``; read them through
``addressing_of(profile)``, not from here, wherever a profile is at hand).
"""

from __future__ import annotations

# kubernetes cmd/kubeadm/app/apis/kubeadm/v1beta4/defaults.go DefaultServicesSubnet
SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.0/16"
# cmd/kubeadm/app/constants/constants.go GetAPIServerVirtualIP: the first address of the subnet
APISERVER_CLUSTER_IP = "10.96.0.1"
# where the ``kubernetes`` Service's endpoints point: kind's first node, DefaultAPIBindPort 6443
APISERVER_ENDPOINT = "172.18.0.2:6443"
# kubeadm DefaultClusterDNSIP (constants.go GetDNSIP: index 10 of the service subnet)
KUBE_DNS_CLUSTER_IP = "10.96.0.10"
# kubeadm DefaultServiceDNSDomain
CLUSTER_DOMAIN = "cluster.local"
