#pragma once
// tpurun _adopt: links the files a stage on a network file system left out of
// the object store into it (hidden; started by stage after the launch).
#include <CLI/CLI.hpp>

#include "cli/app.hpp"

namespace tpurun::cli {

struct AdoptOptions {};

CLI::App* register_adopt(CLI::App& app, AdoptOptions& options);
int run_adopt(const AdoptOptions& options, Context& ctx);

}  // namespace tpurun::cli
