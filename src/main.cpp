// The thin executable: all behaviour lives in gpuexpand_core.
#include "gpuexpand/cli/cli.hpp"

int main(int argc, char** argv) { return gpuexpand::run_cli(argc, argv); }
