#pragma once
// An RSA key in OpenSSH's own private key format, handed to libssh with its CRT
// exponents.
//
// OpenSSH's format ("-----BEGIN OPENSSH PRIVATE KEY-----", what ssh-keygen
// writes by default, gcloud's ~/.ssh/google_compute_engine included) stores
// n, e, d, iqmp, p and q, but not d mod (p-1) and d mod (q-1). libssh 0.9 and
// 0.10 build the OpenSSL key from what the file holds, and OpenSSL, missing
// those two exponents, signs without the Chinese remainder theorem: with the
// whole 3072-bit d, about 4x slower (openssl/openssl#21826, filed by libssh's
// maintainer). tpurun signs once per worker, so for gcloud's 3072-bit key that
// was ~8 ms of the dev VM's CPU per worker instead of ~2 ms (bench/gcloud_ssh.sh).
//
// rsa_pkcs1_pem() computes the two exponents and writes the key as PKCS#1
// ("-----BEGIN RSA PRIVATE KEY-----"), which libssh reads through OpenSSL
// with every parameter. OpenSSH's ssh-keygen -m PEM writes the same bytes
// (the unit test checks it).
#include <optional>
#include <string>
#include <string_view>

namespace tpurun {

// Text that holds a secret: wiped when it goes.
class SecretText {
 public:
  explicit SecretText(std::string text) : text_(std::move(text)) {}
  SecretText(SecretText&& other) noexcept : text_(std::move(other.text_)) { other.wipe(); }
  SecretText& operator=(SecretText&&) = delete;
  SecretText(const SecretText&) = delete;
  ~SecretText() { wipe(); }
  const std::string& str() const { return text_; }

 private:
  void wipe();
  std::string text_;
};

// The PKCS#1 PEM text of an unencrypted OpenSSH-format RSA private key;
// nullopt for anything else (another key type, a passphrase, another format,
// a damaged file): the caller then lets libssh read the file as it is.
std::optional<SecretText> rsa_pkcs1_pem(std::string_view openssh_key_text);

}  // namespace tpurun
