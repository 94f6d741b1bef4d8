// The unit tests' main: GoogleTest's, with the process set up as tpurun's
// main sets it up (util/cancel's install_interrupt_handler): SIGPIPE ignored,
// so a write to a peer that went away (a worker's shell that exited, a closed
// pipe) is an EPIPE error value, as in the product, and not the death of the
// whole test binary.
#include <gmock/gmock.h>

#include <csignal>

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  ::testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
