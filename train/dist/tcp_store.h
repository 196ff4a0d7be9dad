// A small key-value store over TCP for the rendezvous and the heartbeats, speaking PyTorch's
// TCPStore wire protocol (as of PyTorch 2.11: a VALIDATE handshake with its magic number, then
// SET/GET/ADD/CHECK/WAIT/DELETE_KEY/PING queries; little-endian integers, strings as u64 length +
// bytes). One client serves both cases: rank 0's own TcpStoreServer, and under torchrun
// (TORCHELASTIC_USE_AGENT_STORE=True) torchrun's TCPStore, already listening at MASTER_ADDR:PORT.
//
// Keys are opaque bytes; a client may prepend a prefix to every key (ours: "/gpt-train/...").
// Our server adds one thing PyTorch's does not: a key whose name contains "/alive/" (e.g.
// "P/alive/3") is removed when the connection that set it closes, and its last path component is
// appended with a newline to "P/dead" — how the survivors learn at once that a rank died.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/cli/error.h"

namespace gpt::dist {

// The store did not answer a query within the client's timeout (its host may be stopped).
class StoreTimeout : public suite::ToolError {
 public:
  using suite::ToolError::ToolError;
};

class TcpStoreServer {
 public:
  // Listens on `port` (0: any free port) on every address. `host` is only for messages.
  // Throws suite::ToolError "port PORT at HOST is in use" (or another bind error) on failure.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();  // stops serving; clients see their connection closed
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  int port() const { return port_; }
  // Connections currently open (validated or not).
  int clients() const;
  // Waits until at most `keep` clients are connected or `timeout_s` passed: rank 0 keeps serving while the
  // other ranks still need the store (their last heartbeats, their goodbye).
  void wait_for_clients_to_leave(double timeout_s, int keep = 0) const;

 private:
  struct State;
  void run();
  std::unique_ptr<State> state_;
  int port_ = 0;
  std::thread thread_;
};

class TcpStore {
 public:
  // Connects to host:port, retrying until `connect_timeout_s`; then validates and pings.
  // Throws suite::ToolError "cannot reach the rendezvous at HOST:PORT after N s (why)".
  // `timeout_s` bounds every later wait and get, and every answer (StoreTimeout past it).
  TcpStore(const std::string& host, int port, double connect_timeout_s, double timeout_s,
           std::string prefix = "");
  ~TcpStore();
  TcpStore(const TcpStore&) = delete;
  TcpStore& operator=(const TcpStore&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits for the key (up to the store timeout), then returns its value. Throws suite::ToolError
  // naming the key and the address on timeout.
  std::string get(const std::string& key);
  // Adds delta to the integer held as decimal text (0 when absent); returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  // True when every key exists.
  bool check(const std::vector<std::string>& keys);
  // Waits until every key exists; false when `timeout_s` passed first.
  bool wait(const std::vector<std::string>& keys, double timeout_s);
  // Removes a key; true if it existed.
  bool remove(const std::string& key);
  // The local IP address of this connection: the address at which the host that serves the store
  // reaches this one (the TCP communicator advertises it to its peers).
  std::string local_ip() const;
  // "HOST:PORT", for messages.
  const std::string& address() const { return address_; }
  double timeout_s() const { return timeout_s_; }

 private:
  void send_query(uint8_t type, const std::vector<std::string>& strings, const int64_t* value);
  template <class T> T recv_value();
  std::string recv_bytes();
  [[noreturn]] void lost(const std::string& what);
  int fd_ = -1;
  std::string address_;
  std::string prefix_;
  double timeout_s_;
  std::mutex mu_;
};

}  // namespace gpt::dist
