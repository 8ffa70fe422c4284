// StreamBody without sockets: what a writer and a connection see of each other.
#include "dorm/mcp/http_server.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

using dorm::mcp::StreamBody;

TEST_CASE("stream body: unsent counts queued and in-flight bytes until sent; end then close") {
  StreamBody body;
  int closed = 0;
  body.on_closed([&] { ++closed; });
  CHECK(body.write("abc") == 3);
  CHECK(body.write("de") == 5);
  int wakes = 0;
  body.attach([&] { ++wakes; });
  CHECK(wakes == 1);  // attach wakes the connection for what is already queued
  auto p = body.take();
  CHECK(p.bytes == "abcde");
  CHECK_FALSE(p.end);
  CHECK(body.unsent() == 5);  // taken, not yet on the socket
  CHECK(body.write("f") == 6);
  CHECK(wakes == 2);
  body.sent(5);
  CHECK(body.unsent() == 1);
  body.end();
  body.abort();  // an end already asked for wins: the response finishes cleanly
  CHECK_FALSE(body.aborted());
  CHECK(body.write("ignored") == 0);
  p = body.take();
  CHECK(p.bytes == "f");
  CHECK(p.end);
  CHECK(closed == 0);
  body.close();
  body.close();
  CHECK(closed == 1);
  CHECK(body.closed());
  bool late = false;
  body.on_closed([&] { late = true; });  // already closed: runs at once
  CHECK(late);
}

TEST_CASE("stream body: abort drops what is queued; without a connection it closes at once") {
  StreamBody unattached;
  int closed = 0;
  unattached.on_closed([&] { ++closed; });
  unattached.write("abc");
  unattached.abort();
  CHECK(closed == 1);
  CHECK(unattached.unsent() == 0);

  StreamBody attached;
  attached.attach([] {});
  attached.write("abc");
  attached.abort();
  CHECK(attached.aborted());
  CHECK_FALSE(attached.closed());  // the connection closes it once it sees the abort
  CHECK(attached.take().abort);
  attached.close();
  CHECK(attached.closed());
}

TEST_CASE("stream body: a writer and a connection on two threads hand over every byte once") {
  StreamBody body;
  std::string received;
  std::atomic<bool> woke{false};
  body.attach([&] { woke = true; });
  std::thread writer([&] {
    for (int i = 0; i < 10000; ++i) body.write(std::to_string(i % 10));
    body.end();
  });
  for (;;) {
    auto p = body.take();
    received += p.bytes;
    body.sent(p.bytes.size());
    if (p.end) break;
    std::this_thread::yield();
  }
  writer.join();
  body.close();
  CHECK(received.size() == 10000);
  CHECK(received.substr(0, 12) == "012345678901");
  CHECK(body.unsent() == 0);
}
