// OpenSSH-format RSA keys handed to libssh as PKCS#1 with their CRT exponents:
// the bytes must be the ones OpenSSH's own ssh-keygen -m PEM writes.
#include <gtest/gtest.h>
#include <libssh/libssh.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fakes/temp_dir.hpp"
#include "transport/rsa_crt_key.hpp"

namespace tpurun {
namespace {

std::string slurp(const std::string& file) {
  std::ostringstream out;
  out << std::ifstream(file).rdbuf();
  return out.str();
}

class RsaCrtKeyTest : public ::testing::Test {
 protected:
  // ssh-keygen's key of TYPE/BITS (OpenSSH format) at NAME; an optional passphrase.
  std::string keygen(const std::string& name, const std::string& type, int bits, const std::string& pass = "") {
    const std::string file = tmp_.path() + "/" + name;
    const std::string cmd = "ssh-keygen -q -t " + type + (bits ? " -b " + std::to_string(bits) : "") + " -N '" +
                            pass + "' -C test -f " + file + " </dev/null >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " (needs openssh-client)";
    return file;
  }
  // OpenSSH's own conversion of FILE to PKCS#1 PEM, computed by ssh-keygen (OpenSSL).
  std::string openssh_pkcs1(const std::string& file) {
    const std::string copy = file + ".pem";
    std::filesystem::copy_file(file, copy);
    const std::string cmd = "ssh-keygen -q -p -m PEM -P '' -N '' -f " + copy + " >/dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return slurp(copy);
  }
  static std::string body(const std::string& pem) {  // the base64 lines, joined
    std::string out;
    for (char c : pem.substr(pem.find('\n') + 1, pem.rfind("-----END") - pem.find('\n') - 1)) {
      if (c != '\n') out += c;
    }
    return out;
  }
  testing::TempDir tmp_;
};

TEST_F(RsaCrtKeyTest, WritesTheBytesSshKeygenWritesForEverySize) {
  for (int bits : {1024, 2048, 3072, 4096}) {
    const std::string file = keygen("rsa" + std::to_string(bits), "rsa", bits);
    const std::string text = slurp(file);
    ASSERT_NE(text.find("BEGIN OPENSSH PRIVATE KEY"), std::string::npos);
    auto pem = rsa_pkcs1_pem(text);
    ASSERT_TRUE(pem.has_value()) << bits;
    const std::string want = openssh_pkcs1(file);
    ASSERT_EQ(want.rfind("-----BEGIN RSA PRIVATE KEY-----\n", 0), 0u) << want;
    EXPECT_EQ(pem->str().rfind("-----BEGIN RSA PRIVATE KEY-----\n", 0), 0u);
    EXPECT_EQ(body(pem->str()), body(want)) << bits << "-bit key";
  }
}

TEST_F(RsaCrtKeyTest, LibsshReadsItAsTheSameKeyAndSignsWithIt) {
  const std::string file = keygen("gce", "rsa", 3072);
  auto pem = rsa_pkcs1_pem(slurp(file));
  ASSERT_TRUE(pem.has_value());
  ssh_key converted = nullptr, original = nullptr, pub = nullptr;
  ASSERT_EQ(ssh_pki_import_privkey_base64(pem->str().c_str(), nullptr, nullptr, nullptr, &converted), SSH_OK);
  ASSERT_EQ(ssh_pki_import_privkey_file(file.c_str(), nullptr, nullptr, nullptr, &original), SSH_OK);
  ASSERT_EQ(ssh_pki_import_pubkey_file((file + ".pub").c_str(), &pub), SSH_OK);
  EXPECT_TRUE(ssh_key_is_private(converted));
  EXPECT_EQ(ssh_key_cmp(converted, original, SSH_KEY_CMP_PRIVATE), 0);
  EXPECT_EQ(ssh_key_cmp(converted, pub, SSH_KEY_CMP_PUBLIC), 0);
  ssh_key_free(converted);
  ssh_key_free(original);
  ssh_key_free(pub);
}

TEST_F(RsaCrtKeyTest, LeavesEverythingElseToLibssh) {
  EXPECT_FALSE(rsa_pkcs1_pem(slurp(keygen("ed", "ed25519", 0))));
  EXPECT_FALSE(rsa_pkcs1_pem(slurp(keygen("ecdsa", "ecdsa", 256))));
  EXPECT_FALSE(rsa_pkcs1_pem(slurp(keygen("locked", "rsa", 2048, "a passphrase"))));
  const std::string rsa = slurp(keygen("rsa", "rsa", 2048));
  EXPECT_FALSE(rsa_pkcs1_pem(openssh_pkcs1(tmp_.path() + "/rsa")));  // already PEM
  EXPECT_FALSE(rsa_pkcs1_pem(rsa.substr(0, rsa.size() / 2) + "\n-----END OPENSSH PRIVATE KEY-----\n"));
  EXPECT_FALSE(rsa_pkcs1_pem("-----BEGIN OPENSSH PRIVATE KEY-----\n!!!\n-----END OPENSSH PRIVATE KEY-----\n"));
  EXPECT_FALSE(rsa_pkcs1_pem("-----END OPENSSH PRIVATE KEY----- -----BEGIN OPENSSH PRIVATE KEY-----"));
  EXPECT_FALSE(rsa_pkcs1_pem(""));
  EXPECT_TRUE(rsa_pkcs1_pem(rsa));
}

}  // namespace
}  // namespace tpurun
