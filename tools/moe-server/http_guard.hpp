// moe-server's connection handling over cpp-httplib (Debian 0.11.4): what keeps slow or idle
// clients from taking more than their share.
//
// cpp-httplib serves each connection on one pool thread for its whole life, with a timeout per
// recv() only: a client sending one header line a second holds a thread for ever, and the pool's
// queue grows without bound. GuardedServer keeps httplib's request parsing and routing but owns
// the socket I/O of each connection:
//   - one deadline for a whole request (request line, headers and body): a request that has not
//     arrived `requestTimeout` after its first byte is dropped, however it trickles in;
//   - at most `maxRequestBytes` read per request, whatever the transfer encoding;
//   - an idle keep-alive connection is closed after `keepAliveTimeout`, and after
//     `keepAliveMax` requests;
//   - `connections` threads, and at most `queue` accepted connections waiting for one: beyond
//     that a connection gets 503 (JSON body, Retry-After) at once instead of waiting;
//   - the listening socket has SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, with
//     which a second server binds a port the first listens on and the kernel splits the
//     connections between them (answers of another shape, silently).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include <httplib.h>

namespace zp::moeserver {

struct HttpLimits {
    int connections = 32;
    std::size_t queue = 64;
    std::chrono::milliseconds requestTimeout{5000};
    std::chrono::milliseconds writeTimeout{5000};
    std::chrono::milliseconds keepAliveTimeout{2000};
    int keepAliveMax = 100;
    std::size_t maxRequestBytes = std::size_t(64) << 20;  // body limit plus room for headers
};

class GuardedServer : public httplib::Server {
public:
    using Clock = std::chrono::steady_clock;

    explicit GuardedServer(const HttpLimits& limits);

    // When the request being handled on this thread started, as its client sees it: the accept of
    // its connection for the first request (the wait for a free thread included), the arrival of
    // its first byte for a later one on a kept-alive connection.
    static Clock::time_point requestStart();
    // Ends the connection once the current response is written (a body left unread, e.g. 413).
    static void closeAfterResponse();

    // Why `host`:`port` cannot be bound, as bind(2) says with this server's socket options, e.g.
    // "address in use" (another process listens there) or "not an address of this host".
    static std::string bindFailure(const std::string& host, int port);

    // httplib listens with a backlog of 5 (compiled in): past it a connecting client's SYN is
    // dropped and retried a second later. Call after bind_to_port / bind_to_any_port.
    void widenBacklog(int backlog);

    // Connections answered 503 because every thread was busy and the queue was full.
    std::uint64_t rejectedConnections() const noexcept { return rejected_.load(); }
    // Called for each such connection (the metrics and the access log): returns the request id
    // the 503 carries in X-Request-Id.
    std::function<std::string()> onRejected;
    // When set, held one higher while a connection thread serves a connection.
    std::atomic<std::int64_t>* openConnections = nullptr;

private:
    bool process_and_close_socket(socket_t sock) override;

    HttpLimits limits_;
    std::atomic<std::uint64_t> rejected_{0};
};

}  // namespace zp::moeserver
