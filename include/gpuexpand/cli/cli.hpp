#pragma once
// The command line. main.cpp calls run_cli and nothing else; every
// command's behaviour is in the core library so tests can reach it.

namespace gpuexpand {

// Parses arguments, runs the command, returns the process exit code.
// Never throws: unexpected exceptions become one line on stderr and 1.
int run_cli(int argc, char** argv);

}  // namespace gpuexpand
