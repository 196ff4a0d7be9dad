#include "train/dist/tcp_communicator.h"

#include <ifaddrs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/cli/error.h"
#include "train/dist/rendezvous.h"
#include "train/dist/socket_io.h"
#include "train/dist/tcp_store.h"
#include "train/dist/watchdog.h"

namespace gpt::dist {
namespace {

constexpr uint32_t kHelloMagic = 0x67707464;  // "gptd"

// Each message on a connection starts with this header, so that ranks that issue different
// collectives fail with a message instead of exchanging garbage or hanging.
struct Header {
  uint64_t seq;
  uint32_t op;
  uint32_t pad;
  uint64_t bytes;
};
static_assert(sizeof(Header) == 24);

float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays NaN
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

// out = src[0] (op) src[1] (op) ... in rank order, element by element.
template <class T>
void reduce_rows(T* out, const std::vector<const char*>& src, size_t n, bool max) {
  if (n == 0) return;
  std::memcpy(out, src[0], n * sizeof(T));
  for (size_t r = 1; r < src.size(); ++r) {
    const T* s = reinterpret_cast<const T*>(src[r]);
    if (max) {
      for (size_t k = 0; k < n; ++k) out[k] = s[k] > out[k] ? s[k] : out[k];
    } else {
      for (size_t k = 0; k < n; ++k) out[k] += s[k];
    }
  }
}

void reduce_bf16(uint16_t* out, const std::vector<const char*>& src, size_t n, bool max) {
  std::vector<float> acc(n);
  const uint16_t* s0 = reinterpret_cast<const uint16_t*>(src[0]);
  for (size_t k = 0; k < n; ++k) acc[k] = bf16_to_f32(s0[k]);
  for (size_t r = 1; r < src.size(); ++r) {
    const uint16_t* s = reinterpret_cast<const uint16_t*>(src[r]);
    for (size_t k = 0; k < n; ++k) {
      float v = bf16_to_f32(s[k]);
      acc[k] = max ? (v > acc[k] ? v : acc[k]) : acc[k] + v;
    }
  }
  for (size_t k = 0; k < n; ++k) out[k] = f32_to_bf16(acc[k]);
}

// Addresses this host can be reached at: the one the store sees first, then every other IPv4
// interface address (a store reached over loopback says nothing about the other hosts).
std::string advertised_addresses(const std::string& first) {
  std::vector<std::string> out{first};
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
      char buf[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof(buf));
      if (std::find(out.begin(), out.end(), buf) == out.end()) out.push_back(buf);
    }
    freeifaddrs(list);
  }
  std::string s;
  for (const auto& a : out) s += a + " ";
  return s;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t e = s.find(' ', i);
    if (e == std::string::npos) e = s.size();
    if (e > i) out.push_back(s.substr(i, e - i));
    i = e + 1;
  }
  return out;
}

bool is_loopback(const std::string& ip) { return ip.rfind("127.", 0) == 0 || ip == "::1"; }

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s == static_cast<long>(s) ? "%.0f" : "%.1f", s);
  return buf;
}

// After the watchdog's abort the process is about to end with the watchdog's line: a blocked
// call waits for that instead of printing an error of its own.
std::string aborted_message() {
  if (watchdog_ending()) wait_for_watchdog_exit();
  return "the TCP communicator was aborted";
}

}  // namespace

TcpCommunicator::TcpCommunicator(Rendezvous& rv, const std::string& group)
    : TcpCommunicator(rv.store(), rv.rank(), rv.world_size(), rv.hosts(), rv.timeout_s(), group) {}

TcpCommunicator::TcpCommunicator(TcpStore& store, int rank, int size,
                                 std::vector<std::string> hosts, double timeout_s,
                                 const std::string& group)
    : rank_(rank), size_(size), hosts_(std::move(hosts)), fds_(size, -1) {
  hosts_.resize(size);
  if (size == 1) return;
  auto deadline = deadline_after(timeout_s);
  int port = 0;
  int lfd = listen_tcp(0, &port, size + 16);
  if (lfd < 0) throw suite::ToolError(std::string("cannot listen for peers: ") + std::strerror(-lfd));
  const std::string key = "tcp/" + group + "/addr/";
  store.set(key + std::to_string(rank), std::to_string(port) + " " + advertised_addresses(store.local_ip()));
  try {
    // Connect to every lower rank; the higher ranks connect to this one.
    for (int p = 0; p < rank; ++p) {
      auto words = split_words(store.get(key + std::to_string(p)));
      if (words.size() < 2) throw suite::ToolError("rank " + std::to_string(p) + " advertised no address");
      int pport = std::stoi(words[0]);
      int fd = -1;
      std::string why;
      while (fd < 0 && Clock::now() < deadline) {
        for (size_t i = 1; i < words.size() && fd < 0; ++i) {
          if (is_loopback(words[i]) && hosts_[p] != hosts_[rank]) continue;
          auto attempt = std::min(deadline, deadline_after(5));
          fd = connect_tcp(words[i], pport, attempt, &why);
        }
      }
      if (fd < 0)
        throw suite::ToolError("rank " + std::to_string(p) + " (host " + hosts_[p] +
                               ") cannot be reached at port " + std::to_string(pport) + " of " +
                               words[1] + " (" + why + ")");
      uint32_t hello[2] = {kHelloMagic, static_cast<uint32_t>(rank)};
      send_all(fd, hello, sizeof(hello));
      fds_[p] = fd;
    }
    std::set<int> pending;
    for (int p = rank + 1; p < size; ++p) pending.insert(p);
    while (!pending.empty()) {
      if (!wait_readable(lfd, deadline)) {
        std::string names;
        for (int p : pending) names += (names.empty() ? "" : ", ") + std::to_string(p);
        throw suite::ToolError(std::string(pending.size() == 1 ? "rank " : "ranks ") + names +
                               " did not connect to rank " + std::to_string(rank) + " within " +
                               seconds_text(timeout_s) + " s");
      }
      int fd = accept_tcp(lfd);
      if (fd < 0) continue;
      uint32_t hello[2] = {0, 0};
      bool ok = false;
      try {
        ok = recv_all(fd, hello, sizeof(hello), std::min(deadline, deadline_after(10)));
      } catch (const PeerClosed&) {
      }
      int p = static_cast<int>(hello[1]);
      if (!ok || hello[0] != kHelloMagic || !pending.count(p)) {
        close_fd(fd);  // a stray connection, not one of our peers
        continue;
      }
      fds_[p] = fd;
      pending.erase(p);
    }
  } catch (...) {
    close_fd(lfd);
    for (int& fd : fds_) close_fd(fd), fd = -1;
    throw;
  }
  close_fd(lfd);
}

TcpCommunicator::~TcpCommunicator() {
  for (int fd : fds_) close_fd(fd);
}

void TcpCommunicator::abort() {
  aborted_ = true;
  for (int fd : fds_)
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

void TcpCommunicator::peer_failed(int peer) {
  if (aborted_) throw suite::ToolError(aborted_message());
  if (watchdog_ending()) wait_for_watchdog_exit();
  if (explain_) throw suite::ToolError(explain_(peer));
  throw suite::ToolError("rank " + std::to_string(peer) + " (host " + hosts_[peer] + "): died");
}

uint64_t TcpCommunicator::begin(const char* name) {
  if (aborted_) throw suite::ToolError(aborted_message());
  ++seq_;
  if (listener_) listener_->issued(name, seq_);
  return seq_;
}

void TcpCommunicator::end(uint64_t seq) {
  if (listener_) listener_->completed(seq);
}

void TcpCommunicator::exchange(std::vector<Xfer>& xs, Op op, const char* name, uint64_t seq) {
  struct State {
    Header out_h, in_h;
    size_t out_pos = 0, in_pos = 0;
  };
  std::vector<State> st(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    st[i].out_h = {seq, static_cast<uint32_t>(op), 0, xs[i].send_bytes};
    if (!xs[i].sends) st[i].out_pos = SIZE_MAX;
    if (!xs[i].receives) st[i].in_pos = SIZE_MAX;
  }
  std::vector<pollfd> pfds;
  std::vector<size_t> which;
  while (true) {
    pfds.clear();
    which.clear();
    for (size_t i = 0; i < xs.size(); ++i) {
      short ev = 0;
      if (st[i].out_pos != SIZE_MAX && st[i].out_pos < sizeof(Header) + xs[i].send_bytes) ev |= POLLOUT;
      if (st[i].in_pos != SIZE_MAX && st[i].in_pos < sizeof(Header) + xs[i].recv_bytes) ev |= POLLIN;
      if (ev) {
        pfds.push_back({fds_[xs[i].peer], ev, 0});
        which.push_back(i);
      }
    }
    if (pfds.empty()) return;
    int r = ::poll(pfds.data(), pfds.size(), 500);
    if (aborted_) throw suite::ToolError(aborted_message());
    if (r < 0) {
      if (errno == EINTR) continue;
      throw suite::ToolError(std::string("poll: ") + std::strerror(errno));
    }
    for (size_t j = 0; j < pfds.size(); ++j) {
      if (!pfds[j].revents) continue;
      size_t i = which[j];
      Xfer& x = xs[i];
      State& s = st[i];
      int fd = pfds[j].fd;
      if ((pfds[j].revents & (POLLIN | POLLHUP | POLLERR)) && (pfds[j].events & POLLIN)) {
        while (s.in_pos < sizeof(Header) + x.recv_bytes) {
          char* dst;
          size_t want;
          if (s.in_pos < sizeof(Header)) {
            dst = reinterpret_cast<char*>(&s.in_h) + s.in_pos;
            want = sizeof(Header) - s.in_pos;
          } else {
            dst = x.recv + (s.in_pos - sizeof(Header));
            want = sizeof(Header) + x.recv_bytes - s.in_pos;
          }
          ssize_t got = ::recv(fd, dst, want, MSG_DONTWAIT);
          if (got == 0) peer_failed(x.peer);
          if (got < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
            peer_failed(x.peer);
          }
          bool had_header = s.in_pos >= sizeof(Header);
          s.in_pos += static_cast<size_t>(got);
          if (!had_header && s.in_pos >= sizeof(Header)) {
            const Header& h = s.in_h;
            if (h.seq != seq || h.op != static_cast<uint32_t>(op) || h.bytes != x.recv_bytes)
              throw suite::ToolError(
                  "rank " + std::to_string(x.peer) + " (host " + hosts_[x.peer] + ") sent " +
                  std::to_string(h.bytes) + " bytes (step " + std::to_string(h.op) +
                  ") for call #" + std::to_string(h.seq) +
                  " where rank " + std::to_string(rank_) + " expected " +
                  std::to_string(x.recv_bytes) + " bytes (step " +
                  std::to_string(static_cast<uint32_t>(op)) + ") of " + name + " #" +
                  std::to_string(seq) + ": the ranks issue different collectives");
          }
        }
      }
      if ((pfds[j].revents & (POLLOUT | POLLERR | POLLHUP)) && (pfds[j].events & POLLOUT)) {
        while (s.out_pos < sizeof(Header) + x.send_bytes) {
          const char* src;
          size_t want;
          if (s.out_pos < sizeof(Header)) {
            src = reinterpret_cast<const char*>(&s.out_h) + s.out_pos;
            want = sizeof(Header) - s.out_pos;
          } else {
            src = x.send + (s.out_pos - sizeof(Header));
            want = sizeof(Header) + x.send_bytes - s.out_pos;
          }
          ssize_t put = ::send(fd, src, want, MSG_DONTWAIT | MSG_NOSIGNAL);
          if (put < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
            peer_failed(x.peer);
          }
          s.out_pos += static_cast<size_t>(put);
        }
      }
    }
  }
}

void TcpCommunicator::reduce_chunks(const char* in, char* out, const std::vector<size_t>& counts,
                                    const std::vector<size_t>& offs, DType t, bool max,
                                    const char* name) {
  const size_t es = dtype_bytes(t);
  const size_t mine = counts[rank_];
  std::vector<char> recv_buf((size_ - 1) * mine * es);
  std::vector<const char*> src(size_);
  std::vector<Xfer> xs;
  for (int p = 0, slot = 0; p < size_; ++p) {
    if (p == rank_) {
      src[p] = in + offs[p] * es;
      continue;
    }
    char* dst = recv_buf.data() + static_cast<size_t>(slot++) * mine * es;
    src[p] = dst;
    xs.push_back({p, in + offs[p] * es, counts[p] * es, dst, mine * es});
  }
  uint64_t seq = seq_;
  exchange(xs, Op::kReduce, name, seq);
  switch (t) {
    case DType::kF32: reduce_rows(reinterpret_cast<float*>(out), src, mine, max); break;
    case DType::kF64: reduce_rows(reinterpret_cast<double*>(out), src, mine, max); break;
    case DType::kI64: reduce_rows(reinterpret_cast<int64_t*>(out), src, mine, max); break;
    case DType::kBF16: reduce_bf16(reinterpret_cast<uint16_t*>(out), src, mine, max); break;
  }
}

void TcpCommunicator::gather_chunks(const char* mine, char* out, const std::vector<size_t>& counts,
                                    const std::vector<size_t>& offs, DType t, const char* name) {
  const size_t es = dtype_bytes(t);
  char* my_slot = out + offs[rank_] * es;
  if (my_slot != mine && counts[rank_] > 0) std::memmove(my_slot, mine, counts[rank_] * es);
  std::vector<Xfer> xs;
  for (int p = 0; p < size_; ++p)
    if (p != rank_) xs.push_back({p, my_slot, counts[rank_] * es, out + offs[p] * es, counts[p] * es});
  exchange(xs, Op::kGather, name, seq_);
}

void TcpCommunicator::all_reduce_sum(void* buf, size_t n, DType t) {
  uint64_t seq = begin("all_reduce");
  if (size_ > 1) {
    std::vector<size_t> counts(size_), offs(size_);
    size_t base = n / size_, rem = n % size_, off = 0;
    for (int r = 0; r < size_; ++r) {
      counts[r] = base + (static_cast<size_t>(r) < rem ? 1 : 0);
      offs[r] = off;
      off += counts[r];
    }
    const size_t es = dtype_bytes(t);
    std::vector<char> reduced(counts[rank_] * es);
    char* b = static_cast<char*>(buf);
    reduce_chunks(b, reduced.data(), counts, offs, t, false, "all_reduce");
    gather_chunks(reduced.data(), b, counts, offs, t, "all_reduce");
  }
  end(seq);
}

void TcpCommunicator::reduce_scatter_sum(const void* in, void* out, size_t n, DType t) {
  uint64_t seq = begin("reduce_scatter");
  std::vector<size_t> counts(size_, n), offs(size_);
  for (int r = 0; r < size_; ++r) offs[r] = n * r;
  if (size_ == 1) {
    if (n > 0) std::memmove(out, in, n * dtype_bytes(t));
  } else {
    reduce_chunks(static_cast<const char*>(in), static_cast<char*>(out), counts, offs, t, false,
                  "reduce_scatter");
  }
  end(seq);
}

void TcpCommunicator::all_gather(const void* in, void* out, size_t n, DType t) {
  uint64_t seq = begin("all_gather");
  std::vector<size_t> counts(size_, n), offs(size_);
  for (int r = 0; r < size_; ++r) offs[r] = n * r;
  gather_chunks(static_cast<const char*>(in), static_cast<char*>(out), counts, offs, t,
                "all_gather");
  end(seq);
}

void TcpCommunicator::broadcast(void* buf, size_t n, DType t, int root) {
  uint64_t seq = begin("broadcast");
  const size_t bytes = n * dtype_bytes(t);
  std::vector<Xfer> xs;
  if (rank_ == root) {
    for (int p = 0; p < size_; ++p)
      if (p != rank_) xs.push_back({p, static_cast<const char*>(buf), bytes, nullptr, 0, true, false});
  } else {
    xs.push_back({root, nullptr, 0, static_cast<char*>(buf), bytes, false, true});
  }
  exchange(xs, Op::kBroadcast, "broadcast", seq);
  end(seq);
}

void TcpCommunicator::send(const void* buf, size_t n, DType t, int peer) {
  if (aborted_) throw suite::ToolError(aborted_message());
  std::vector<Xfer> xs{{peer, static_cast<const char*>(buf), n * dtype_bytes(t), nullptr, 0, true, false}};
  exchange(xs, Op::kP2P, "send", 0);
}

void TcpCommunicator::recv(void* buf, size_t n, DType t, int peer) {
  if (aborted_) throw suite::ToolError(aborted_message());
  std::vector<Xfer> xs{{peer, nullptr, 0, static_cast<char*>(buf), n * dtype_bytes(t), false, true}};
  exchange(xs, Op::kP2P, "recv", 0);
}

void TcpCommunicator::send_recv(const std::vector<P2POp>& ops) {
  if (aborted_) throw suite::ToolError(aborted_message());
  // One transfer per peer, its send and its receive moving together over the one connection.
  std::vector<Xfer> xs;
  for (const P2POp& op : ops) {
    if (op.peer < 0 || op.peer >= size_ || op.peer == rank_)
      throw suite::ToolError("send_recv: rank " + std::to_string(op.peer) + " is not a peer");
    auto it = std::find_if(xs.begin(), xs.end(), [&](const Xfer& x) { return x.peer == op.peer; });
    if (it == xs.end()) {
      xs.push_back({op.peer, nullptr, 0, nullptr, 0, false, false});
      it = xs.end() - 1;
    }
    const size_t bytes = op.n * dtype_bytes(op.t);
    if (op.send ? it->sends : it->receives)
      throw suite::ToolError("send_recv: two " + std::string(op.send ? "sends to" : "receives from") +
                             " rank " + std::to_string(op.peer) + " in one batch");
    if (op.send) {
      it->sends = true;
      it->send = static_cast<const char*>(op.buf);
      it->send_bytes = bytes;
    } else {
      it->receives = true;
      it->recv = static_cast<char*>(op.buf);
      it->recv_bytes = bytes;
    }
  }
  exchange(xs, Op::kP2P, "send_recv", 0);
}

void TcpCommunicator::host_reduce_f64(double* v, size_t n, bool max) {
  uint64_t seq = begin(max ? "host_all_reduce_max" : "host_all_reduce_sum");
  if (size_ > 1) {
    std::vector<size_t> counts(size_, n), offs(size_);
    for (int r = 0; r < size_; ++r) offs[r] = n * r;
    std::vector<double> all(n * size_);
    gather_chunks(reinterpret_cast<const char*>(v), reinterpret_cast<char*>(all.data()), counts,
                  offs, DType::kF64, "host_all_reduce");
    std::vector<const char*> src(size_);
    for (int r = 0; r < size_; ++r) src[r] = reinterpret_cast<const char*>(all.data() + n * r);
    reduce_rows(v, src, n, max);
  }
  end(seq);
}

}  // namespace gpt::dist
