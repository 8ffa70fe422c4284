#include "http_wire.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/beast/http.hpp>
#include <cerrno>

namespace dorm::fuzz {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

// Closes the descriptor whichever way exchange() returns.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
}

// A non-blocking connection to 127.0.0.1:port, made before `deadline`, or -1.
int connect_loopback(std::uint16_t port, Clock::time_point deadline) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) == 0) return fd;
  if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int error = 0;
    socklen_t len = sizeof error;
    if (::poll(&p, 1, remaining_ms(deadline)) == 1 &&
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0) {
      return fd;
    }
  }
  ::close(fd);
  return -1;
}

}  // namespace

Exchange exchange(std::uint16_t port, std::string_view bytes, std::chrono::milliseconds bound) {
  Exchange got;
  const auto deadline = Clock::now() + bound;
  Socket socket{connect_loopback(port, deadline)};
  if (socket.fd < 0) return got;
  got.connected = true;

  std::size_t sent = 0;
  bool sending = true;
  if (bytes.empty()) {
    ::shutdown(socket.fd, SHUT_WR);
    sending = false;
  }
  std::array<char, 64 * 1024> chunk;
  for (;;) {
    int wait = remaining_ms(deadline);
    if (wait == 0) return got;
    pollfd p{socket.fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
    int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return got;
    if (sending && (p.revents & POLLOUT)) {
      ssize_t n = ::send(socket.fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n > 0) sent += static_cast<std::size_t>(n);
      // The server may close before it has read everything (a refused request): what it
      // answered is still to be read.
      if (n < 0 && errno != EAGAIN && errno != EINTR) sending = false;
      if (sent == bytes.size()) {
        ::shutdown(socket.fd, SHUT_WR);
        sending = false;
      }
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = ::recv(socket.fd, chunk.data(), chunk.size(), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        got.closed = true;  // end of stream, or a reset
        return got;
      }
      if (n > 0) {
        std::size_t keep =
            std::min<std::size_t>(static_cast<std::size_t>(n), kKeptBytes - got.received.size());
        got.received.append(chunk.data(), keep);
        if (keep < static_cast<std::size_t>(n)) got.truncated = true;
      }
    }
  }
}

std::vector<std::string> request_methods(std::string_view sent, std::size_t header_limit) {
  std::vector<std::string> methods;
  std::size_t at = 0;
  while (at < sent.size()) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(header_limit));
    parser.body_limit(boost::none);
    parser.eager(true);
    bool recorded = false;
    while (!parser.is_done()) {
      beast::error_code ec;
      std::size_t used = parser.put(net::buffer(sent.data() + at, sent.size() - at), ec);
      at += used;
      if (parser.is_header_done() && !recorded) {
        methods.emplace_back(parser.get().method_string());
        recorded = true;
      }
      // need_more with every byte offered: the request is incomplete, and the server
      // waits for the rest until the end of stream. Any other error: it stops reading.
      if (ec || (used == 0 && !parser.is_done())) return methods;
    }
  }
  return methods;
}

Reading read_responses(const Exchange& got, const std::vector<std::string>& methods) {
  Reading reading;
  std::string_view rest = got.received;
  const bool cut_by_us = !got.closed || got.truncated;
  for (std::size_t i = 0; !rest.empty(); ++i) {
    http::response_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(boost::none);
    parser.eager(true);
    if (i < methods.size() && methods[i] == "HEAD") parser.skip(true);
    beast::error_code ec;
    std::size_t used = 0;
    while (!parser.is_done()) {
      std::size_t n = parser.put(net::buffer(rest.data() + used, rest.size() - used), ec);
      used += n;
      if (ec == http::error::need_more || (!ec && n == 0)) break;
      if (ec) {
        reading.problem = "response " + std::to_string(i + 1) + " is malformed (" + ec.message() +
                          ") at byte " + std::to_string(got.received.size() - rest.size() + used);
        return reading;
      }
    }
    if (!parser.is_header_done()) {
      if (!cut_by_us) {
        reading.problem = "the server closed the connection inside the header of response " +
                          std::to_string(i + 1);
      }
      return reading;
    }
    if (!parser.is_done() && !cut_by_us) {
      ec = {};
      parser.put_eof(ec);  // a body delimited by the close is complete now; others are cut
    }
    const auto& message = parser.get();
    Response response;
    response.status = static_cast<int>(message.result_int());
    if (response.status < 200 || response.status > 599) {
      reading.problem = "response " + std::to_string(i + 1) + " has status " +
                        std::to_string(response.status) + ", outside 200-599";
      return reading;
    }
    if (auto id = message.find("mcp-session-id"); id != message.end()) {
      response.session_id = std::string(id->value());
    }
    response.complete = parser.is_done();
    response.body = message.body();
    reading.responses.push_back(std::move(response));
    if (!parser.is_done()) return reading;
    rest.remove_prefix(used);
  }
  return reading;
}

std::string first_event_id(std::string_view body) {
  std::size_t at = 0;
  while (at < body.size()) {
    std::size_t end = body.find('\n', at);
    if (end == std::string_view::npos) end = body.size();
    std::string_view line = body.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.starts_with("id:")) {
      line.remove_prefix(3);
      if (line.starts_with(' ')) line.remove_prefix(1);
      return std::string(line);
    }
    at = end + 1;
  }
  return {};
}

}  // namespace dorm::fuzz
