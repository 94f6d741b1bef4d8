#include "transport/rsa_crt_key.hpp"

#include <string.h>  // explicit_bzero

#include <cstdint>
#include <vector>

namespace tpurun {
namespace {

// Every buffer below may hold a piece of the private key: wiped on the way out.
template <typename T>
struct Wiped : T {
  using T::T;
  ~Wiped() { explicit_bzero(this->data(), this->size() * sizeof(typename T::value_type)); }
};
using Bytes = Wiped<std::string>;
using Limbs = Wiped<std::vector<uint32_t>>;  // a number, least significant 32 bits first

constexpr std::string_view kBegin = "-----BEGIN OPENSSH PRIVATE KEY-----";
constexpr std::string_view kEnd = "-----END OPENSSH PRIVATE KEY-----";
constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool base64_decode(std::string_view text, Bytes& out) {
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    const size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  acc = 0;
  return true;
}

void base64_lines(std::string_view in, std::string& out) {
  size_t column = 0;
  auto put = [&](char c) {
    out.push_back(c);
    if (++column == 64) {
      out.push_back('\n');
      column = 0;
    }
  };
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t chunk = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) chunk |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) chunk |= static_cast<uint8_t>(in[i + 2]);
    put(kAlphabet[(chunk >> 18) & 63]);
    put(kAlphabet[(chunk >> 12) & 63]);
    put(i + 1 < in.size() ? kAlphabet[(chunk >> 6) & 63] : '=');
    put(i + 2 < in.size() ? kAlphabet[chunk & 63] : '=');
  }
  if (column != 0) out.push_back('\n');
}

// RFC 4251's wire types, as in OpenSSH's PROTOCOL.key.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool u32(uint32_t& v) {
    if (in_.size() < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(in_[i]);
    in_.remove_prefix(4);
    return true;
  }
  bool str(std::string_view& s) {
    uint32_t n = 0;
    if (!u32(n) || in_.size() < n) return false;
    s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool literal(std::string_view want) {
    std::string_view s;
    return str(s) && s == want;
  }

 private:
  std::string_view in_;
};

std::string_view magnitude(std::string_view big_endian) {
  while (!big_endian.empty() && big_endian.front() == '\0') big_endian.remove_prefix(1);
  return big_endian;
}

Limbs to_limbs(std::string_view big_endian) {
  big_endian = magnitude(big_endian);
  Limbs out((big_endian.size() + 3) / 4, 0);
  for (size_t i = 0; i < big_endian.size(); ++i) {
    const size_t from_end = big_endian.size() - 1 - i;
    out[from_end / 4] |= static_cast<uint32_t>(static_cast<uint8_t>(big_endian[i])) << (8 * (from_end % 4));
  }
  return out;
}

void to_big_endian(const Limbs& n, Bytes& out) {
  for (size_t i = n.size() * 4; i-- > 0;) out.push_back(static_cast<char>((n[i / 4] >> (8 * (i % 4))) & 0xff));
}

// a mod m by binary long division, one bit of a at a time; the same steps and
// memory accesses whatever the secret's value (the subtraction is masked in).
Limbs mod(const Limbs& a, const Limbs& m) {
  const size_t k = m.size();
  Limbs r(k + 1, 0), t(k + 1, 0);
  for (size_t bit = a.size() * 32; bit-- > 0;) {
    uint32_t carry = (a[bit / 32] >> (bit % 32)) & 1;
    for (size_t j = 0; j <= k; ++j) {
      const uint32_t out = r[j] >> 31;
      r[j] = (r[j] << 1) | carry;
      carry = out;
    }
    uint64_t borrow = 0;
    for (size_t j = 0; j <= k; ++j) {
      const uint64_t diff = uint64_t{r[j]} - (j < k ? m[j] : 0) - borrow;
      t[j] = static_cast<uint32_t>(diff);
      borrow = diff >> 63;
    }
    const uint32_t keep_t = static_cast<uint32_t>(borrow) - 1;  // all ones when r >= m
    for (size_t j = 0; j <= k; ++j) r[j] = (t[j] & keep_t) | (r[j] & ~keep_t);
  }
  return r;
}

void der_length(std::string& out, size_t n) {
  if (n < 0x80) {
    out.push_back(static_cast<char>(n));
    return;
  }
  std::string bytes;
  for (; n != 0; n >>= 8) bytes.insert(bytes.begin(), static_cast<char>(n & 0xff));
  out.push_back(static_cast<char>(0x80 | bytes.size()));
  out += bytes;
}

void der_integer(std::string& out, std::string_view big_endian) {
  std::string_view m = magnitude(big_endian);
  const bool pad = m.empty() || (static_cast<uint8_t>(m.front()) & 0x80);
  out.push_back(0x02);
  der_length(out, m.size() + (pad ? 1 : 0));
  if (pad) out.push_back('\0');
  out.append(m);
}

}  // namespace

void SecretText::wipe() { explicit_bzero(text_.data(), text_.size()); }

std::optional<SecretText> rsa_pkcs1_pem(std::string_view text) {
  const size_t begin = text.find(kBegin);
  const size_t end = text.find(kEnd);
  if (begin == std::string_view::npos || end == std::string_view::npos || end < begin) return std::nullopt;
  Bytes blob;
  blob.reserve(text.size());  // grown in place: no stray copies of the key
  if (!base64_decode(text.substr(begin + kBegin.size(), end - begin - kBegin.size()), blob)) return std::nullopt;

  constexpr std::string_view kMagic{"openssh-key-v1\0", 15};
  if (std::string_view(blob).substr(0, kMagic.size()) != kMagic) return std::nullopt;
  Reader file(std::string_view(blob).substr(kMagic.size()));
  std::string_view ignored, private_part;
  uint32_t keys = 0;
  // A key under a passphrase ("aes256-ctr", "bcrypt") is left to libssh and ssh-agent.
  if (!file.literal("none") || !file.literal("none") || !file.str(ignored) || !file.u32(keys) || keys != 1 ||
      !file.str(ignored) || !file.str(private_part)) {
    return std::nullopt;
  }
  Reader key(private_part);
  uint32_t check1 = 0, check2 = 1;
  std::string_view n, e, d, iqmp, p, q;
  if (!key.u32(check1) || !key.u32(check2) || check1 != check2 || !key.literal("ssh-rsa") || !key.str(n) ||
      !key.str(e) || !key.str(d) || !key.str(iqmp) || !key.str(p) || !key.str(q)) {
    return std::nullopt;
  }
  const Limbs dl = to_limbs(d);
  Limbs p1 = to_limbs(p), q1 = to_limbs(q);
  // p and q are odd primes: p-1 is p with its lowest bit cleared.
  if (dl.empty() || p1.empty() || q1.empty() || (p1[0] & 1) == 0 || (q1[0] & 1) == 0) return std::nullopt;
  p1[0] &= ~1u;
  q1[0] &= ~1u;
  Bytes dmp1, dmq1;
  dmp1.reserve(p.size() + 4);  // grown in place, as every buffer here: no stray copies of the key
  dmq1.reserve(q.size() + 4);
  to_big_endian(mod(dl, p1), dmp1);
  to_big_endian(mod(dl, q1), dmq1);

  // RFC 8017 A.1.2: RSAPrivateKey ::= SEQUENCE { version 0, n, e, d, p, q, d mod (p-1), d mod (q-1), q^-1 mod p }
  Bytes body;
  body.reserve(blob.size() + dmp1.size() + dmq1.size() + 64);
  der_integer(body, std::string_view("\0", 1));
  for (std::string_view part : {n, e, d, p, q, std::string_view(dmp1), std::string_view(dmq1), iqmp}) {
    der_integer(body, part);
  }
  Bytes der;
  der.reserve(body.size() + 8);
  der.push_back(0x30);
  der_length(der, body.size());
  der += body;
  std::string pem = "-----BEGIN RSA PRIVATE KEY-----\n";
  pem.reserve(pem.size() + der.size() * 4 / 3 + der.size() / 48 + 64);  // no reallocation: no stray copies
  base64_lines(der, pem);
  pem += "-----END RSA PRIVATE KEY-----\n";
  return SecretText(std::move(pem));
}

}  // namespace tpurun
