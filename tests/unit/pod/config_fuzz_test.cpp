// Arbitrary bytes must never crash the config reader: each input either
// parses or throws ConfigError. Deterministic seeds keep failures reproducible.
#include <gtest/gtest.h>

#include <random>

#include "fakes/system_fakes.hpp"
#include "pod/jsonc.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun {
namespace {

using tpurun::testing::FakeEnvironment;

// kSeeds[0] is a complete config; kSeeds[1] is plain JSON that exercises
// the lexer (escapes, numbers, literals) more than the schema.
const char* const kSeeds[] = {
    R"({
  // comments, trailing commas, every key
  "default_pod": "sim",
  "pods": {
    "sim": { "workers": ["127.0.1.1", "127.0.1.2:2222", "[::1]:22", "host.example"],
             "ssh": { "user": "alice", "identity_file": "~/.ssh/id_ed25519",
                      "known_hosts": ["~/.ssh/known_hosts", "/etc/ssh/k"],
                      "host_key_policy": "accept-new", "connect_timeout_s": 10, },
             "staging_root": "/srv/nfs/staging", "logs_root": "/srv/nfs/logs",
             "device_globs": ["/dev/accel*", "/dev/vfio/[0-9]*"],
             "stage_size_limit": "1GiB" },
    /* a gcloud pod */
    "v4-32": { "gcloud": { "name": "kmh-tpuvm-v4-32-1", "zone": "us-central2-b", "project": "p",
                           "internal_ip": true },
               "staging_root": "/s", "logs_root": "/l", "stage_size_limit": 1e9 },
  },
})",
    R"({"pods": {"a": {"workers": ["x"], "staging_root": "/s", "logs_root": "/l"}}, "x": [1, -2.5e-3, true, false, null, "\u00e9\ud83d\ude00\n\"\\"]})",
};

std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += std::string{digits[c >> 4], digits[c & 15]};
  return out;
}

class ConfigFuzzTest : public ::testing::Test {
 protected:
  // Runs the whole reader; any exception other than ConfigError is a bug.
  void check(const std::string& text) {
    try {
      parse_config(text, "fuzz.json", env_);
    } catch (const ConfigError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected " << e.what() << " for input (hex) " << hex(text);
    }
  }

  std::string mutate(std::string text) {
    static const std::string interesting = "{}[],:\"\\/*\n \t0123456789-+.eE\xff\xc3\xa9tfnu";
    int edits = 1 + static_cast<int>(rng_() % 4);
    for (int i = 0; i < edits; ++i) {
      size_t pos = text.empty() ? 0 : rng_() % text.size();
      switch (rng_() % 6) {
        case 0:
          if (!text.empty()) text[pos] = static_cast<char>(rng_());
          break;
        case 1:
          text.insert(pos, 1, interesting[rng_() % interesting.size()]);
          break;
        case 2:
          text.erase(pos, rng_() % 8);
          break;
        case 3:
          text.insert(pos, text.substr(rng_() % (text.size() + 1), rng_() % 32));
          break;
        case 4:
          text.resize(pos);
          break;
        case 5:
          if (!text.empty()) text[pos] = interesting[rng_() % interesting.size()];
          break;
      }
    }
    return text;
  }

  FakeEnvironment env_{std::map<std::string, std::string>{{"HOME", "/home/f"}, {"USER", "f"}}};
  std::mt19937 rng_{12345};
};

TEST_F(ConfigFuzzTest, SeedsAreValid) {
  EXPECT_NO_THROW(parse_config(kSeeds[0], "seed.json", env_));
  EXPECT_NO_THROW(jsonc::parse(kSeeds[1], "seed.json"));
}

TEST_F(ConfigFuzzTest, MutatedConfigsParseOrThrowConfigError) {
  for (int i = 0; i < 20000; ++i) check(mutate(kSeeds[i % 2]));
}

TEST_F(ConfigFuzzTest, RandomBytesParseOrThrowConfigError) {
  for (int i = 0; i < 5000; ++i) {
    std::string text(rng_() % 64, '\0');
    for (char& c : text) c = static_cast<char>(rng_());
    check(text);
    check("{" + text);
    check("{\"pods\": " + text);
  }
}

TEST_F(ConfigFuzzTest, AgreesWithNlohmannOnWhatItAccepts) {
  // given mutations that nlohmann (with comments enabled) also accepts,
  // the values must be the same; the only thing we reject beyond nlohmann
  // is a duplicate key
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = mutate(kSeeds[1]);
    auto reference = nlohmann::json::parse(text, nullptr, false, /*ignore_comments=*/true);
    if (reference.is_discarded()) continue;
    try {
      jsonc::Document doc = jsonc::parse(text, "fuzz.json");
      EXPECT_EQ(doc.value, reference) << hex(text);
      for (const auto& [pointer, line] : doc.lines) EXPECT_GE(line, 1) << pointer;
      ++compared;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("duplicate key"), std::string::npos)
          << e.what() << " " << hex(text);
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(GcloudDescribeFuzzTest, MalformedDescriptionsThrowRuntimeErrorOnly) {
  std::mt19937 rng(777);
  const std::string seed = R"({"state": "READY", "networkEndpoints": [{"ipAddress": "10.0.0.1",
      "accessConfig": {"externalIp": "1.2.3.4"}, "port": 8470}, {"ipAddress": "10.0.0.2"}]})";
  for (int i = 0; i < 5000; ++i) {
    std::string text = seed;
    for (int k = 0; k < 3; ++k) text[rng() % text.size()] = "{}[],:\"0a "[rng() % 11];
    for (bool internal : {true, false}) {
      try {
        parse_gcloud_describe(text, internal);
      } catch (const std::runtime_error&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what() << " for " << text;
      }
    }
  }
}

}  // namespace
}  // namespace tpurun
