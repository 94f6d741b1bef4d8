#include "transport/keeper/keeper_settings.hpp"

#include <gtest/gtest.h>

namespace tpurun::keeper {
namespace {

SshTransportOptions sample() {
  SshTransportOptions o;
  o.ssh.user = "alice";
  o.ssh.identity_file = "/home/alice/.ssh/id_ed25519";
  o.ssh.identities_only = true;
  o.ssh.known_hosts = {"/home/alice/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"};
  o.ssh.host_key_policy = HostKeyPolicy::strict;
  o.ssh.alias_known_hosts = "/home/alice/.ssh/google_compute_known_hosts";
  o.ssh.connect_timeout_s = 7;
  o.key_exchange = "curve25519-sha256";
  return o;
}

TEST(KeeperSettingsTest, SettingsCrossTheSocketUnchanged) {
  const SshTransportOptions back = settings_from_json(nlohmann::json::parse(settings_json(sample()).dump()));
  EXPECT_EQ(back.ssh.user, "alice");
  EXPECT_EQ(back.ssh.identity_file, "/home/alice/.ssh/id_ed25519");
  EXPECT_TRUE(back.ssh.identities_only);
  EXPECT_EQ(back.ssh.known_hosts.size(), 2u);
  EXPECT_EQ(back.ssh.host_key_policy, HostKeyPolicy::strict);
  EXPECT_EQ(back.ssh.alias_known_hosts, "/home/alice/.ssh/google_compute_known_hosts");
  EXPECT_EQ(back.ssh.connect_timeout_s, 7);
  EXPECT_EQ(back.key_exchange, "curve25519-sha256");
}

TEST(KeeperSettingsTest, AnUnknownHostKeyPolicyIsReadAsStrict) {
  nlohmann::json j = settings_json(sample());
  j["host_key_policy"] = 99;
  EXPECT_EQ(settings_from_json(j).ssh.host_key_policy, HostKeyPolicy::strict);
}

TEST(KeeperSettingsTest, AWorkerCrossesUnchanged) {
  Worker w;
  w.index = 5;
  w.host = "10.0.0.6";
  w.port = 2222;
  w.host_key_alias = "tpu.123-5";
  w.slice = 1;
  w.slice_worker = 1;
  const Worker back = worker_from_json(worker_json(w));
  EXPECT_EQ(back.index, 5);
  EXPECT_EQ(back.host, "10.0.0.6");
  EXPECT_EQ(back.port, 2222);
  EXPECT_EQ(back.host_key_alias, "tpu.123-5");
  EXPECT_EQ(back.name(), w.name());
}

TEST(KeeperSettingsTest, AnyChangeOfSettingsOrWorkerIsAnotherKey) {
  Worker w;
  w.host = "10.0.0.6";
  const nlohmann::json base = settings_json(sample());
  const std::string key = session_key(base, w);
  EXPECT_EQ(session_key(settings_json(sample()), w), key);
  SshTransportOptions other = sample();
  other.ssh.known_hosts = {"/tmp/known_hosts"};
  EXPECT_NE(session_key(settings_json(other), w), key);
  other = sample();
  other.ssh.identity_file = "/home/alice/.ssh/other";
  EXPECT_NE(session_key(settings_json(other), w), key);
  Worker moved = w;
  moved.port = 2222;
  EXPECT_NE(session_key(base, moved), key);
  Worker recreated = w;
  recreated.host_key_alias = "tpu.456-0";
  EXPECT_NE(session_key(base, recreated), key);
}

}  // namespace
}  // namespace tpurun::keeper
