#include "train/dist/socket_io.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace gpt::dist {
namespace {

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1000000 ? 1000000 : static_cast<int>(left.count());
}

void set_nodelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// One non-blocking connect attempt bounded by the deadline; 0 or an errno value.
int try_connect(int fd, const sockaddr* addr, socklen_t len, Clock::time_point deadline) {
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, addr, len);
  int err = rc == 0 ? 0 : errno;
  if (rc != 0 && err == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int ready = 0;
    do {
      ready = poll(&p, 1, remaining_ms(deadline));
    } while (ready < 0 && errno == EINTR);
    if (ready <= 0) {
      err = ETIMEDOUT;
    } else {
      socklen_t l = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
    }
  }
  fcntl(fd, F_SETFL, flags);
  return err;
}

}  // namespace

int connect_tcp(const std::string& host, int port, Clock::time_point deadline, std::string* why) {
  auto pause = std::chrono::milliseconds(20);
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port_text = std::to_string(port);
    int gai = getaddrinfo(host.c_str(), port_text.c_str(), &hints, &res);
    if (gai != 0) {
      if (why) *why = std::string("cannot resolve the host name: ") + gai_strerror(gai);
    } else {
      for (addrinfo* a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        int err = try_connect(fd, a->ai_addr, a->ai_addrlen, deadline);
        if (err == 0) {
          freeaddrinfo(res);
          set_nodelay(fd);
          return fd;
        }
        if (why) *why = std::strerror(err);
        ::close(fd);
      }
      freeaddrinfo(res);
    }
    if (Clock::now() + pause >= deadline) return -1;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(1000));
  }
}

int listen_tcp(int port, int* bound_port, int backlog) {
  int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool v6 = fd >= 0;
  if (!v6) fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (rc != 0 || listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    return -err;
  }
  sockaddr_storage s{};
  socklen_t l = sizeof(s);
  getsockname(fd, reinterpret_cast<sockaddr*>(&s), &l);
  if (bound_port)
    *bound_port = s.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&s)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&s)->sin_port);
  return fd;
}

int accept_tcp(int listen_fd) {
  int fd;
  do {
    fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd >= 0) set_nodelay(fd);
  return fd;
}

void send_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw PeerClosed(std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

bool wait_readable(int fd, Clock::time_point deadline) {
  while (true) {
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    if (errno != EINTR) throw PeerClosed(std::strerror(errno));
  }
}

bool recv_all(int fd, void* data, size_t n, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0) throw PeerClosed("connection closed");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) throw PeerClosed(std::strerror(errno));
    if (!wait_readable(fd, deadline)) return false;
  }
  return true;
}

void close_fd(int fd) {
  if (fd >= 0) ::close(fd);
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

}  // namespace gpt::dist
