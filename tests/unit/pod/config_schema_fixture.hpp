#pragma once
// A fixture for parse_config tests: a fixed environment and small config
// builders whose line numbers the tests rely on.
#include <gtest/gtest.h>

#include <string>

#include "fakes/system_fakes.hpp"
#include "tpurun/pod/config.hpp"

namespace tpurun::testing {

class ConfigSchemaTest : public ::testing::Test {
 protected:
  ConfigSchemaTest()
      : env_(std::map<std::string, std::string>{{"HOME", "/home/alice"}, {"USER", "alice"}}) {}

  ConfigFile parse(const std::string& text) { return parse_config(text, "tpurun.json", env_); }

  std::string error(const std::string& text) {
    try {
      parse(text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "(no error)";
  }

  // A minimal valid pod with `extra` spliced in as its first members.
  static std::string pod_with(const std::string& extra) {
    return "{\n"
           "  \"pods\": {\n"
           "    \"sim\": {\n" +
           extra +
           "      \"workers\": [\"127.0.1.1\"],\n"
           "      \"staging_root\": \"/srv/staging\", \"logs_root\": \"/srv/logs\"\n"
           "    }\n"
           "  }\n"
           "}\n";
  }

  // A gcloud pod whose "gcloud" object is `body`, on line 4.
  static std::string gcloud_pod(const std::string& body) {
    return "{\n"
           "  \"pods\": {\n"
           "    \"v4\": {\n"
           "      \"gcloud\": " +
           body +
           ",\n"
           "      \"staging_root\": \"/srv/staging\", \"logs_root\": \"/srv/logs\"\n"
           "    }\n"
           "  }\n"
           "}\n";
  }

  FakeEnvironment env_;
};

}  // namespace tpurun::testing
