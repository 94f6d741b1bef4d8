#pragma once

namespace tpurun::cli {

// Parses argv, runs the chosen subcommand, maps errors to exit codes.
int main(int argc, char** argv);

}  // namespace tpurun::cli
