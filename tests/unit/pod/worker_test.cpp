#include "tpurun/pod/worker.hpp"

#include <gtest/gtest.h>

TEST(WorkerTest, DisplayOmitsDefaultPort) {
  tpurun::Worker w{3, "127.0.1.4", 22};
  EXPECT_EQ(w.display(), "w3 127.0.1.4");
  w.port = 2222;
  EXPECT_EQ(w.display(), "w3 127.0.1.4:2222");
}
