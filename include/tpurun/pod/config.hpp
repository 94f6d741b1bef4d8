#pragma once
// Loading tpurun.json (JSON with comments) and choosing a pod.
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tpurun/pod/pod.hpp"
#include "tpurun/util/system.hpp"

namespace tpurun {

// A config problem. what() is "FILE:LINE: message" (LINE omitted when unknown).
class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, int line, const std::string& message);
  // Syntax errors also know the column: what() is "FILE:LINE:COLUMN: message",
  // the form compilers use, so editors can jump to it.
  ConfigError(std::string file, int line, int column, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int column() const { return column_; }  // 1-based byte column; 0 when unknown

 private:
  std::string file_;
  int line_;
  int column_ = 0;
};

// board.gcloud: the TPU VMs that `status --all` lists besides the config's
// pods, from `gcloud compute tpus tpu-vm list --project P --zone Z`.
struct BoardGcloud {
  std::string project;
  std::vector<std::string> zones;
  bool internal_ip = true;
  SshSettings ssh;  // how to reach their workers (gcloud pods' defaults, then board.gcloud.ssh)
};

struct ConfigFile {
  std::string path;
  std::string default_pod;
  std::map<std::string, PodConfig> pods;  // gcloud pods have no workers yet
  std::vector<std::string> order;         // pod names in file order, by line (--pod auto picks the first free)
  std::optional<BoardGcloud> board_gcloud;
};

// Parses the text of a config file. `path` is only used in error messages.
// Throws ConfigError for syntax errors, unknown keys, wrong types, bad values.
ConfigFile parse_config(const std::string& text, const std::string& path, const Environment& env);

// --config FILE, else ./tpurun.json, else $XDG_CONFIG_HOME/tpurun/config.json
// (XDG_CONFIG_HOME defaults to ~/.config). nullopt when there is none.
std::optional<std::string> find_config_file(const std::optional<std::string>& explicit_path,
                                            const Environment& env);

// Command-line values that override the config file.
struct PodOverrides {
  std::optional<std::string> user;
  std::optional<std::string> identity_file;
  std::optional<HostKeyPolicy> host_key_policy;
  std::optional<int> connect_timeout_s;
};

struct PodRequest {
  std::optional<std::string> config_path;  // --config
  std::optional<std::string> pod;          // --pod (else TPURUN_POD, else default_pod)
  PodOverrides overrides;
  // false: the command reads run records only (logs, runs, gc, tensorboard),
  // so a gcloud pod is not described and its workers stay empty; they work
  // when the TPU VM is preempted, stopped or gone.
  bool need_workers = true;
  // true: describe the TPU VM now, even if a recent answer is kept (doctor).
  bool describe_fresh = false;
};

// The whole path from flags to a pod with workers: find and parse the config,
// pick the pod (with a "did you mean" hint for unknown names), run
// `gcloud ... describe` for gcloud pods, apply overrides.
// With no config file and no --pod, returns the local pod (this host alone).
// Throws ConfigError (config problems), TpuUnavailable (tpu_node.hpp: the TPU
// VM is not READY, or gone) or std::runtime_error (gcloud failed, carrying
// gcloud's own stderr).
PodConfig load_pod(const PodRequest& request, const Environment& env, ProcessRunner& runner);

// A pod with no shared mount, its roots under `root` ("~/.tpurun" or an
// absolute path): on the workers as given, here with ~ expanded.
void set_local_roots(PodConfig& pod, const std::string& root, const Environment& env);

// Workers from the JSON printed by `gcloud compute tpus tpu-vm describe --format=json`.
// Throws std::runtime_error on malformed input.
std::vector<Worker> parse_gcloud_describe(const std::string& json_text, bool internal_ip);

// The command that prints a gcloud pod's description, for running and for -v.
std::vector<std::string> gcloud_describe_argv(const GcloudSpec& spec);

// `gcloud compute tpus tpu-vm ssh NAME --zone Z [--project P] [--internal-ip]
// --worker=W --command=true`: what gcloud does on first use, once: it puts the
// user's key (~/.ssh/google_compute_engine.pub) in the TPU VM's metadata and
// records the workers' host keys under their aliases.
std::vector<std::string> gcloud_import_argv(const GcloudSpec& spec, const std::string& workers);

std::optional<HostKeyPolicy> parse_host_key_policy(const std::string& s);
const char* to_string(HostKeyPolicy p);

// "1GiB" -> 1073741824, "500MB" -> 500000000, "4096" -> 4096. Units are
// case-insensitive: B, KB, MB, GB, TB (powers of 1000), KiB, MiB, GiB, TiB
// (powers of 1024). nullopt for anything else or above 2^64-1.
std::optional<std::uint64_t> parse_byte_size(const std::string& s);

}  // namespace tpurun
