#pragma once
// What `gcloud compute tpus tpu-vm describe NAME --zone us-central2-b
// --format=json` prints for a v4-32 (4 hosts), trimmed of nothing that
// matters: gcloud sorts keys and indents by two.
namespace tpurun::testing {

inline constexpr const char* kDescribeV4_32 = R"({
  "acceleratorConfig": {
    "topology": "2x2x4",
    "type": "V4"
  },
  "acceleratorType": "v4-32",
  "apiVersion": "V2",
  "cidrBlock": "10.130.0.0/20",
  "createTime": "2024-03-01T09:12:44.153846817Z",
  "health": "HEALTHY",
  "id": "4311795032516739462",
  "metadata": {
    "ssh-keys": "alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample alice@laptop"
  },
  "name": "projects/my-proj/locations/us-central2-b/nodes/kmh-tpuvm-v4-32-1",
  "networkConfig": {
    "enableExternalIps": true,
    "network": "projects/my-proj/global/networks/default",
    "subnetwork": "projects/my-proj/regions/us-central2/subnetworks/default"
  },
  "networkEndpoints": [
    {
      "accessConfig": {
        "externalIp": "35.186.10.1"
      },
      "ipAddress": "10.130.0.12",
      "port": 8470
    },
    {
      "accessConfig": {
        "externalIp": "35.186.10.2"
      },
      "ipAddress": "10.130.0.9",
      "port": 8470
    },
    {
      "accessConfig": {
        "externalIp": "35.186.10.3"
      },
      "ipAddress": "10.130.0.11",
      "port": 8470
    },
    {
      "accessConfig": {
        "externalIp": "35.186.10.4"
      },
      "ipAddress": "10.130.0.10",
      "port": 8470
    }
  ],
  "runtimeVersion": "tpu-ubuntu2204-base",
  "schedulingConfig": {},
  "serviceAccount": {
    "email": "123456789-compute@developer.gserviceaccount.com",
    "scope": [
      "https://www.googleapis.com/auth/cloud-platform"
    ]
  },
  "shieldedInstanceConfig": {},
  "state": "READY"
}
)";

// A TPU VM created with --internal-ips: no accessConfig at all.
inline constexpr const char* kDescribeInternalOnly = R"({
  "acceleratorType": "v5litepod-8",
  "name": "projects/p/locations/us-west4-a/nodes/small",
  "networkEndpoints": [
    {"ipAddress": "10.0.0.2", "port": 8470}
  ],
  "state": "READY"
})";

// Still being created: gcloud prints the node without endpoints.
inline constexpr const char* kDescribeCreating = R"({
  "acceleratorType": "v4-32",
  "name": "projects/p/locations/us-central2-b/nodes/new",
  "state": "CREATING"
})";

}  // namespace tpurun::testing
