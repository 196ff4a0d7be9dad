#include "train/dist/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <unordered_map>

#include "common/cli/error.h"
#include "train/dist/socket_io.h"

namespace gpt::dist {
namespace {

// PyTorch's c10d::detail::QueryType values and magic number (TCPStoreBackend.hpp, 2.11).
enum Query : uint8_t {
  kValidate = 0, kSet = 1, kCompareSet = 2, kGet = 3, kAdd = 4, kCheck = 5, kWait = 6,
  kGetNumKeys = 7, kDeleteKey = 8, kAppend = 9, kMultiGet = 10, kMultiSet = 11,
  kCancelWait = 12, kPing = 13,
};
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
constexpr uint8_t kReady = 0, kNotReady = 1;            // CheckResponseType
constexpr uint8_t kStopWaiting = 0, kWaitCanceled = 1;  // WaitResponseType
constexpr uint64_t kMaxKey = 1 << 20, kMaxPayload = 1ull << 30, kMaxKeys = 1 << 20;

std::string seconds_text(double s) {
  if (std::fabs(s - std::round(s)) < 1e-9) return std::to_string(static_cast<long>(std::round(s)));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", s);
  return buf;
}

template <class T> void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
void put_bytes(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server: one thread polling the listening socket, a wake-up pipe and every client.

struct TcpStoreServer::State {
  struct Conn {
    std::string in;
    bool validated = false;
    std::vector<std::string> alive_keys;  // "/alive/" keys this connection set
  };
  std::string host;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> stop{false};
  std::atomic<int> clients{0};
  std::map<int, Conn> conns;
  std::unordered_map<std::string, std::string> kv;
  std::unordered_map<std::string, std::vector<int>> waiting;  // key -> waiting connections
  std::unordered_map<int, size_t> awaited;                    // connection -> keys still missing
  std::vector<int> broken;  // connections whose answer could not be sent: dropped after the round

  void reply(int fd, const std::string& bytes) {
    try {
      send_all(fd, bytes.data(), bytes.size());
    } catch (const PeerClosed&) {
      broken.push_back(fd);
    }
  }
  void wake_waiters(const std::string& key) {
    auto it = waiting.find(key);
    if (it == waiting.end()) return;
    std::vector<int> fds = std::move(it->second);
    waiting.erase(it);
    for (int fd : fds) {
      auto a = awaited.find(fd);
      if (a != awaited.end() && --a->second == 0) {
        awaited.erase(a);
        reply(fd, std::string(1, static_cast<char>(kStopWaiting)));
      }
    }
  }
  void clear_wait(int fd) {
    if (!awaited.erase(fd)) return;
    for (auto it = waiting.begin(); it != waiting.end();) {
      std::erase(it->second, fd);
      it = it->second.empty() ? waiting.erase(it) : std::next(it);
    }
  }
  void set(int fd, const std::string& key, std::string value) {
    kv[key] = std::move(value);
    if (key.find("/alive/") != std::string::npos) conns[fd].alive_keys.push_back(key);
    wake_waiters(key);
  }
  void drop(int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    std::vector<std::string> alive = std::move(it->second.alive_keys);
    conns.erase(it);
    clear_wait(fd);
    close_fd(fd);
    clients.fetch_sub(1);
    for (const std::string& key : alive) {
      if (!kv.erase(key)) continue;  // removed on purpose before closing: a normal exit
      size_t cut = key.rfind("/alive/");
      std::string dead = key.substr(0, cut) + "/dead";
      kv[dead] += key.substr(cut + 7) + "\n";
      wake_waiters(dead);
    }
  }

  // Parses and answers every complete query in the connection's buffer. False: drop it.
  bool serve(int fd) {
    Conn& c = conns[fd];
    size_t pos = 0;
    while (pos < c.in.size()) {
      size_t p = pos;
      bool complete = true;
      auto take = [&](void* out, size_t n) {
        if (!complete || c.in.size() - p < n) return complete = false;
        std::memcpy(out, c.in.data() + p, n);
        p += n;
        return true;
      };
      bool too_big = false;
      auto take_str = [&](std::string& s, uint64_t limit) {
        uint64_t n = 0;
        if (!take(&n, 8)) return false;
        if (n > limit) {
          too_big = true;
          return complete = false;
        }
        if (c.in.size() - p < n) return complete = false;
        s.assign(c.in.data() + p, n);
        p += n;
        return true;
      };
      auto take_keys = [&](std::vector<std::string>& keys) {
        uint64_t n = 0;
        if (!take(&n, 8)) return false;
        if (n > kMaxKeys) {
          too_big = true;
          return complete = false;
        }
        keys.resize(n);
        for (auto& k : keys)
          if (!take_str(k, kMaxKey)) return false;
        return true;
      };
      uint8_t q = static_cast<uint8_t>(c.in[p++]);
      if (!c.validated) {
        uint32_t magic = 0;
        if (q != kValidate) return false;
        if (!take(&magic, 4)) break;
        if (magic != kValidationMagic) return false;
        c.validated = true;
        pos = p;
        continue;
      }
      std::string key, value, other, out;
      std::vector<std::string> keys;
      int64_t delta = 0;
      uint32_t nonce = 0;
      switch (q) {
        case kSet:
          if (take_str(key, kMaxKey) && take_str(value, kMaxPayload)) set(fd, key, std::move(value));
          break;
        case kCompareSet:
          if (take_str(key, kMaxKey) && take_str(value, kMaxPayload) &&
              take_str(other, kMaxPayload)) {
            auto it = kv.find(key);
            if (it == kv.end()) {
              if (value.empty()) set(fd, key, other);
              put_bytes(out, value.empty() ? other : value);
            } else {
              if (it->second == value) set(fd, key, other);
              put_bytes(out, kv[key]);
            }
            reply(fd, out);
          }
          break;
        case kGet:
          if (take_str(key, kMaxKey)) {
            auto it = kv.find(key);
            put_bytes(out, it == kv.end() ? std::string() : it->second);
            reply(fd, out);
          }
          break;
        case kAdd:
          if (take_str(key, kMaxKey) && take(&delta, 8)) {
            auto it = kv.find(key);
            if (it != kv.end()) delta += std::strtoll(it->second.c_str(), nullptr, 10);
            kv[key] = std::to_string(delta);
            put<int64_t>(out, delta);
            reply(fd, out);
            wake_waiters(key);
          }
          break;
        case kCheck:
        case kWait:
          if (take_keys(keys)) {
            size_t missing = 0;
            for (const auto& k : keys) missing += kv.count(k) ? 0 : 1;
            if (q == kCheck) {
              reply(fd, std::string(1, static_cast<char>(missing ? kNotReady : kReady)));
            } else if (missing == 0) {
              reply(fd, std::string(1, static_cast<char>(kStopWaiting)));
            } else {
              for (const auto& k : keys)
                if (!kv.count(k)) waiting[k].push_back(fd);
              awaited[fd] = missing;
            }
          }
          break;
        case kGetNumKeys:
          put<int64_t>(out, static_cast<int64_t>(kv.size()));
          reply(fd, out);
          break;
        case kDeleteKey:
          if (take_str(key, kMaxKey)) {
            put<int64_t>(out, static_cast<int64_t>(kv.erase(key)));
            reply(fd, out);
          }
          break;
        case kAppend:
          if (take_str(key, kMaxKey) && take_str(value, kMaxPayload)) {
            kv[key] += value;
            wake_waiters(key);
          }
          break;
        case kMultiGet:
          if (take_keys(keys)) {
            for (const auto& k : keys) {
              auto it = kv.find(k);
              put_bytes(out, it == kv.end() ? std::string() : it->second);
            }
            reply(fd, out);
          }
          break;
        case kMultiSet: {
          uint64_t n = 0;
          std::vector<std::pair<std::string, std::string>> items;
          if (take(&n, 8)) {
            if (n > kMaxKeys) return false;
            items.resize(n);
            for (auto& [k, v] : items)
              if (!take_str(k, kMaxKey) || !take_str(v, kMaxPayload)) break;
            if (complete)
              for (auto& [k, v] : items) set(fd, k, std::move(v));
          }
          break;
        }
        case kCancelWait:
          clear_wait(fd);
          reply(fd, std::string(1, static_cast<char>(kWaitCanceled)));
          break;
        case kPing:
          if (take(&nonce, 4)) {
            put<uint32_t>(out, nonce);
            reply(fd, out);
          }
          break;
        default:
          return false;
      }
      if (too_big) return false;
      if (!complete) break;
      pos = p;
    }
    c.in.erase(0, pos);
    return true;
  }
};

TcpStoreServer::TcpStoreServer(const std::string& host, int port)
    : state_(std::make_unique<State>()) {
  state_->host = host;
  int fd = listen_tcp(port, &port_);
  if (fd < 0) {
    if (-fd == EADDRINUSE)
      throw suite::ToolError("port " + std::to_string(port) + " at " + host + " is in use");
    throw suite::ToolError("cannot listen on port " + std::to_string(port) + " at " + host + ": " +
                           std::strerror(-fd));
  }
  state_->listen_fd = fd;
  if (pipe2(state_->wake, O_CLOEXEC) != 0) {
    close_fd(fd);
    throw suite::ToolError(std::string("pipe: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { run(); });
}

TcpStoreServer::~TcpStoreServer() {
  state_->stop = true;
  char b = 0;
  if (write(state_->wake[1], &b, 1) < 0) {
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, c] : state_->conns) close_fd(fd);
  close_fd(state_->listen_fd);
  close_fd(state_->wake[0]);
  close_fd(state_->wake[1]);
}

int TcpStoreServer::clients() const { return state_->clients.load(); }

void TcpStoreServer::wait_for_clients_to_leave(double timeout_s, int keep) const {
  auto deadline = deadline_after(timeout_s);
  while (state_->clients.load() > keep && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

void TcpStoreServer::run() {
  State& s = *state_;
  std::vector<pollfd> fds;
  std::vector<char> buf(1 << 16);
  while (!s.stop) {
    fds.clear();
    fds.push_back({s.listen_fd, POLLIN, 0});
    fds.push_back({s.wake[0], POLLIN, 0});
    for (auto& [fd, c] : s.conns) fds.push_back({fd, POLLIN, 0});
    int r = poll(fds.data(), fds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (s.stop) break;
    if (fds[0].revents & POLLIN) {
      int c = accept_tcp(s.listen_fd);
      if (c >= 0) {
        // A client that stops reading (a stopped process) must not block the store for others.
        timeval tv{5, 0};
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        s.conns[c];
        s.clients.fetch_add(1);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      int fd = fds[i].fd;
      ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) {
        s.drop(fd);
        continue;
      }
      s.conns[fd].in.append(buf.data(), static_cast<size_t>(n));
      if (!s.serve(fd)) s.drop(fd);
    }
    std::vector<int> broken = std::move(s.broken);
    s.broken.clear();
    for (int fd : broken) s.drop(fd);
  }
}

// ---------------------------------------------------------------------------------------------
// Client.

TcpStore::TcpStore(const std::string& host, int port, double connect_timeout_s, double timeout_s,
                   std::string prefix)
    : address_(host + ":" + std::to_string(port)), prefix_(std::move(prefix)),
      timeout_s_(timeout_s) {
  std::string why;
  auto deadline = deadline_after(connect_timeout_s);
  auto unreachable = [&] {
    return suite::ToolError("cannot reach the rendezvous at " + address_ + " after " +
                            seconds_text(connect_timeout_s) + " s" +
                            (why.empty() ? "" : " (" + why + ")"));
  };
  fd_ = connect_tcp(host, port, deadline, &why);
  if (fd_ < 0) throw unreachable();
  try {
    std::string hello;
    put<uint8_t>(hello, kValidate);
    put<uint32_t>(hello, kValidationMagic);
    uint32_t nonce = static_cast<uint32_t>(getpid()), echo = 0;
    put<uint8_t>(hello, kPing);
    put<uint32_t>(hello, nonce);
    send_all(fd_, hello.data(), hello.size());
    // A listener that is not a store never answers the ping.
    auto ping_deadline = std::max(deadline, deadline_after(std::min(timeout_s, 30.0)));
    if (!recv_all(fd_, &echo, 4, ping_deadline) || echo != nonce) {
      why = "no store answers there";
      close_fd(fd_);
      throw unreachable();
    }
  } catch (const PeerClosed& e) {
    why = std::string("the connection closed: ") + e.what();
    close_fd(fd_);
    throw unreachable();
  }
}

TcpStore::~TcpStore() { close_fd(fd_); }

void TcpStore::lost(const std::string& what) {
  throw suite::ToolError("the rendezvous at " + address_ + " " + what);
}

void TcpStore::send_query(uint8_t type, const std::vector<std::string>& strings,
                          const int64_t* value) {
  std::string out;
  put<uint8_t>(out, type);
  for (const auto& s : strings) put_bytes(out, s);
  if (value) put<int64_t>(out, *value);
  try {
    send_all(fd_, out.data(), out.size());
  } catch (const PeerClosed& e) {
    lost(std::string("closed the connection (") + e.what() + ")");
  }
}

template <class T> T TcpStore::recv_value() {
  T v{};
  try {
    if (!recv_all(fd_, &v, sizeof(T), deadline_after(timeout_s_)))
      throw StoreTimeout("the rendezvous at " + address_ + " did not answer within " +
                         seconds_text(timeout_s_) + " s");
  } catch (const PeerClosed& e) {
    lost(std::string("closed the connection (") + e.what() + ")");
  }
  return v;
}

std::string TcpStore::recv_bytes() {
  uint64_t n = recv_value<uint64_t>();
  if (n > kMaxPayload) lost("sent a value of " + std::to_string(n) + " bytes");
  std::string s(n, '\0');
  try {
    if (n && !recv_all(fd_, s.data(), n, deadline_after(timeout_s_)))
      throw StoreTimeout("the rendezvous at " + address_ + " did not answer within " +
                         seconds_text(timeout_s_) + " s");
  } catch (const PeerClosed& e) {
    lost(std::string("closed the connection (") + e.what() + ")");
  }
  return s;
}

void TcpStore::set(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  send_query(kSet, {prefix_ + key, value}, nullptr);
}

std::string TcpStore::get(const std::string& key) {
  if (!wait({key}, timeout_s_))
    throw suite::ToolError("key '" + prefix_ + key + "' did not appear in the rendezvous at " +
                           address_ + " within " + seconds_text(timeout_s_) + " s");
  std::lock_guard<std::mutex> lock(mu_);
  send_query(kGet, {prefix_ + key}, nullptr);
  return recv_bytes();
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  send_query(kAdd, {prefix_ + key}, &delta);
  return recv_value<int64_t>();
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  put<uint8_t>(out, kCheck);
  put<uint64_t>(out, keys.size());
  for (const auto& k : keys) put_bytes(out, prefix_ + k);
  try {
    send_all(fd_, out.data(), out.size());
  } catch (const PeerClosed& e) {
    lost(std::string("closed the connection (") + e.what() + ")");
  }
  return recv_value<uint8_t>() == kReady;
}

bool TcpStore::wait(const std::vector<std::string>& keys, double timeout_s) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  put<uint8_t>(out, kWait);
  put<uint64_t>(out, keys.size());
  for (const auto& k : keys) put_bytes(out, prefix_ + k);
  try {
    send_all(fd_, out.data(), out.size());
    uint8_t r = 0;
    if (recv_all(fd_, &r, 1, deadline_after(timeout_s))) {
      if (r != kStopWaiting) lost("answered a wait with " + std::to_string(r));
      return true;
    }
    // Timed out: cancel; the store may have answered STOP_WAITING just before.
    out.clear();
    put<uint8_t>(out, kCancelWait);
    send_all(fd_, out.data(), out.size());
    auto d = deadline_after(30);
    if (!recv_all(fd_, &r, 1, d)) lost("did not answer a cancelled wait within 30 s");
    if (r == kWaitCanceled) return false;
    if (!recv_all(fd_, &r, 1, d) || r != kWaitCanceled)
      lost("did not answer a cancelled wait");
    return true;
  } catch (const PeerClosed& e) {
    lost(std::string("closed the connection (") + e.what() + ")");
  }
}

std::string TcpStore::local_ip() const {
  sockaddr_storage s{};
  socklen_t l = sizeof(s);
  char buf[INET6_ADDRSTRLEN] = {};
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&s), &l) != 0) return "127.0.0.1";
  if (s.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&s)->sin_addr, buf, sizeof(buf));
    return buf;
  }
  auto* a6 = reinterpret_cast<sockaddr_in6*>(&s);
  if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr)) {
    inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], buf, sizeof(buf));
    return buf;
  }
  inet_ntop(AF_INET6, &a6->sin6_addr, buf, sizeof(buf));
  return buf;
}

bool TcpStore::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  send_query(kDeleteKey, {prefix_ + key}, nullptr);
  return recv_value<int64_t>() == 1;
}

}  // namespace gpt::dist
