#pragma once
// The builtin step kinds. A new kind is one file in src/steps/ defining
// `const StepKind& NAME_kind()`, plus one X(NAME) line here: the list is
// both the declarations and the registry's order (registry.cpp).

#include "gpuexpand/steps/step_kind.hpp"

#define GPUEXPAND_STEP_KINDS(X) \
  X(hostname)                   \
  X(timezone)                   \
  X(file)                       \
  X(copy)                       \
  X(line)                       \
  X(directory)                  \
  X(repository)                 \
  X(package)                    \
  X(service)                    \
  X(sysctl)                     \
  X(kernel_module)              \
  X(mount)                      \
  X(address)                    \
  X(command)                    \
  X(reboot)                     \
  X(acceptance)

namespace gpuexpand::steps {

// In a kind's file: the accessor the list declares, one static instance.
#define GPUEXPAND_STEP_KIND(name, Class) \
  const StepKind& name##_kind() {        \
    static const Class kind;             \
    return kind;                         \
  }

#define GPUEXPAND_DECLARE_KIND(name) const StepKind& name##_kind();
GPUEXPAND_STEP_KINDS(GPUEXPAND_DECLARE_KIND)
#undef GPUEXPAND_DECLARE_KIND

}  // namespace gpuexpand::steps
