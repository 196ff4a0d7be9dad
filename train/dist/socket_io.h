// Blocking TCP helpers shared by the store, the TCP communicator and the watchdog: connect with
// retries until a deadline, listen on a port, and whole-buffer send/receive that report a closed
// peer or a timeout instead of hanging.
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace gpt::dist {

using Clock = std::chrono::steady_clock;

inline Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

// The other end closed the connection or it broke (reset, unreachable).
class PeerClosed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Connects to host:port, retrying refused and unreachable attempts until `deadline`.
// Returns the socket (TCP_NODELAY set) or -1 with *why saying what the last attempt met.
int connect_tcp(const std::string& host, int port, Clock::time_point deadline, std::string* why);

// Listens on every address (IPv6 and IPv4 where possible) at `port` (0: any free port).
// Returns the socket or -errno; *bound_port is the port actually bound.
int listen_tcp(int port, int* bound_port, int backlog = 1024);

// Accepts one connection (TCP_NODELAY set); -1 on error.
int accept_tcp(int listen_fd);

// Sends every byte; throws PeerClosed when the peer is gone.
void send_all(int fd, const void* data, size_t n);
// Receives exactly n bytes. Returns false when `deadline` passed first (the bytes already
// received are lost for the caller: treat the connection as unusable); throws PeerClosed.
bool recv_all(int fd, void* data, size_t n, Clock::time_point deadline);
// Waits until fd is readable; false on timeout.
bool wait_readable(int fd, Clock::time_point deadline);

void close_fd(int fd);

// This host's name, as gethostname gives it.
std::string local_hostname();

}  // namespace gpt::dist
