#include "cli/app.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>

namespace tpurun::cli {

int main(int argc, char** argv) {
  CLI::App app{"tpurun: run and manage jobs on Google Cloud TPU VM pods"};
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace tpurun::cli
