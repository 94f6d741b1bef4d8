#include "cli/app.hpp"

int main(int argc, char** argv) { return tpurun::cli::main(argc, argv); }
