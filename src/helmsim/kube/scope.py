"""Which kinds are cluster-scoped (no namespace), written once for the whole project."""

from __future__ import annotations

# Built-in cluster-scoped kinds (kubectl api-resources --namespaced=false, Kubernetes 1.31).
CLUSTER_SCOPED_KINDS: frozenset[str] = frozenset(
    {
        "APIService", "CertificateSigningRequest", "ClusterRole", "ClusterRoleBinding",
        "ComponentStatus", "CSIDriver", "CSINode", "CustomResourceDefinition",
        "FlowSchema", "IngressClass", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume",
        "PodSecurityPolicy", "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass",
        "SelfSubjectAccessReview", "SelfSubjectReview", "SelfSubjectRulesReview",
        "StorageClass", "StorageVersionMigration", "SubjectAccessReview", "TokenReview",
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration", "VolumeAttachment", "VolumeAttributesClass",
        "DeviceClass", "ResourceSlice", "IPAddress", "ServiceCIDR",
        # Well-known CRD-defined cluster-scoped kinds, for manifests rendered without their CRD.
        "CiliumClusterwideNetworkPolicy", "CiliumClusterwideEnvoyConfig", "CiliumIdentity",
        "CiliumNode", "CiliumExternalWorkload", "CiliumLoadBalancerIPPool",
        "ClusterIssuer", "ClusterPolicy", "ClusterSecretStore",
    }
)


def guess_plural(kind: str) -> str:
    """The resource name Kubernetes guesses for a kind.

    kubernetes/apimachinery pkg/api/meta/restmapper.go UnsafeGuessKindToResource: lower-case,
    then ``s`` → ``ses``, ``y`` → ``ies``, else add ``s``.
    """
    singular = kind.lower()
    if singular.endswith("s"):
        return singular + "es"
    if singular.endswith("y"):
        return singular[:-1] + "ies"
    return singular + "s"
