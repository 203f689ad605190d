#include "http_guard.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "moe_service.hpp"

namespace zp::moeserver {
namespace {

using Clock = GuardedServer::Clock;

thread_local Clock::time_point tAccepted{};      // set by the pool before it runs a connection
thread_local bool tRejecting = false;            // the pool runs a connection only to refuse it
thread_local Clock::time_point tRequestStart{};  // the current request's start (requestStart())
thread_local bool tCloseAfter = false;

int msUntil(Clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
    return ms <= 0 ? 0 : int(std::min<long long>(ms, 1 << 30));
}

bool waitFor(int fd, short events, int timeoutMs) {
    pollfd p{fd, events, 0};
    while (true) {
        const int r = ::poll(&p, 1, timeoutMs);
        if (r < 0 && errno == EINTR) continue;
        return r > 0;
    }
}

void endpoint(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    const int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
                       : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    if (r != 0) return;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a.ss_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
        ::inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
        port = ntohs(v4->sin_port);
    } else if (a.ss_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
        ::inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
        port = ntohs(v6->sin6_port);
    }
    ip = buf;
}

// The socket of one connection with a deadline for the request being read and a byte budget.
class DeadlineStream : public httplib::Stream {
public:
    DeadlineStream(int fd, const HttpLimits& limits) : fd_(fd), limits_(limits) {}

    void startRequest() {
        deadline_ = Clock::now() + limits_.requestTimeout;
        budget_ = limits_.maxRequestBytes;
    }

    bool is_readable() const override { return waitFor(fd_, POLLIN, msUntil(deadline_)); }
    bool is_writable() const override { return waitFor(fd_, POLLOUT, int(limits_.writeTimeout.count())); }

    ssize_t read(char* ptr, size_t size) override {
        if (budget_ == 0) return -1;  // more than any acceptable request: drop it
        size = std::min(size, budget_);
        if (!waitFor(fd_, POLLIN, msUntil(deadline_))) return -1;  // the request took too long
        while (true) {
            const ssize_t n = ::recv(fd_, ptr, size, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n > 0) budget_ -= std::size_t(n);
            return n;
        }
    }
    ssize_t write(const char* ptr, size_t size) override {
        if (!is_writable()) return -1;
        while (true) {
            const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            return n;
        }
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { endpoint(fd_, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { endpoint(fd_, false, ip, port); }
    socket_t socket() const override { return fd_; }

private:
    int fd_;
    const HttpLimits& limits_;
    Clock::time_point deadline_{};
    std::size_t budget_ = 0;
};

// `threads` workers and at most `capacity` waiting connections. A connection that finds the queue
// full is still run, at once on the accepting thread, with tRejecting set: process_and_close_socket
// then only answers 503 and closes (httplib hands the queue a closure, not the socket).
class BoundedPool : public httplib::TaskQueue {
public:
    BoundedPool(int threads, std::size_t capacity) : capacity_(capacity) {
        for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~BoundedPool() override = default;

    void enqueue(std::function<void()> fn) override {
        {
            std::lock_guard lock(mutex_);
            if (jobs_.size() < capacity_ || idle_ > jobs_.size()) {
                jobs_.push_back({std::move(fn), Clock::now()});
                ready_.notify_one();
                return;
            }
        }
        tRejecting = true;
        fn();
        tRejecting = false;
    }
    void shutdown() override {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        ready_.notify_all();
        for (auto& t : workers_) t.join();
    }

private:
    struct Job {
        std::function<void()> fn;
        Clock::time_point accepted;
    };
    void work() {
        while (true) {
            Job job;
            {
                std::unique_lock lock(mutex_);
                ++idle_;
                ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
                --idle_;
                if (jobs_.empty()) return;  // stopping, nothing left
                job = std::move(jobs_.front());
                jobs_.pop_front();
            }
            tAccepted = job.accepted;
            job.fn();
        }
    }

    const std::size_t capacity_;
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Job> jobs_;
    std::size_t idle_ = 0;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

void refuse(int fd, const std::string& requestId) {
    const std::string body = jsonError(
        "the server is at its connection limit (every connection thread busy and the queue full); retry later",
        "unavailable");
    const std::string head = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nRetry-After: 1\r\nConnection: close\r\n" +
                             (requestId.empty() ? "" : "X-Request-Id: " + requestId + "\r\n") + "\r\n";
    const std::string all = head + body;
    // A fresh socket's send buffer takes these few hundred bytes at once: never blocks the acceptor.
    (void)::send(fd, all.data(), all.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

// The listening socket's options: SO_REUSEADDR (a restart binds at once past connections in
// TIME_WAIT) and not httplib's SO_REUSEPORT (a port another process listens on is refused).
void reuseAddressOnly(int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace

GuardedServer::GuardedServer(const HttpLimits& limits) : limits_(limits) {
    const int threads = limits_.connections;
    const std::size_t queue = limits_.queue;
    new_task_queue = [threads, queue] { return new BoundedPool(threads, queue); };
    set_socket_options(reuseAddressOnly);
}

std::string GuardedServer::bindFailure(const std::string& host, int port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list); rc != 0)
        return std::string("not an address (") + ::gai_strerror(rc) + ")";
    std::string why = "no address";
    for (const addrinfo* a = list; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            why = std::strerror(errno);
            continue;
        }
        reuseAddressOnly(fd);
        const int rc = ::bind(fd, a->ai_addr, a->ai_addrlen), err = errno;
        ::close(fd);
        if (rc == 0) {
            why = "it can be bound now (it could not a moment ago)";
            continue;
        }
        why = err == EADDRINUSE      ? "address in use"
              : err == EADDRNOTAVAIL ? "not an address of this host"
              : err == EACCES        ? "permission denied (ports below 1024 need privileges)"
                                     : std::strerror(err);
        break;
    }
    ::freeaddrinfo(list);
    return why;
}

void GuardedServer::widenBacklog(int backlog) {
    const socket_t listening = svr_sock_;
    if (listening != INVALID_SOCKET) ::listen(listening, backlog);  // Linux: updates the backlog
}

GuardedServer::Clock::time_point GuardedServer::requestStart() { return tRequestStart; }
void GuardedServer::closeAfterResponse() { tCloseAfter = true; }

bool GuardedServer::process_and_close_socket(socket_t sock) {
    if (tRejecting) {
        refuse(sock, onRejected ? onRejected() : std::string());
        ++rejected_;
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        return true;
    }
    struct Held {  // the open-connections gauge, whatever way this returns
        std::atomic<std::int64_t>* g;
        explicit Held(std::atomic<std::int64_t>* gauge) : g(gauge) {
            if (g) ++*g;
        }
        ~Held() {
            if (g) --*g;
        }
    } held(openConnections);
    DeadlineStream strm(sock, limits_);
    bool ok = true;
    for (int count = 0; count < limits_.keepAliveMax && is_running(); ++count) {
        // The first request may already wait in the socket; later ones get the keep-alive timeout.
        const auto idle = count == 0 ? limits_.requestTimeout : limits_.keepAliveTimeout;
        if (!waitFor(sock, POLLIN, int(idle.count()))) break;
        tRequestStart = count == 0 && tAccepted != Clock::time_point{} ? tAccepted : Clock::now();
        tCloseAfter = false;
        strm.startRequest();
        bool closed = false;
        const bool last = count + 1 == limits_.keepAliveMax || !is_running();
        ok = process_request(strm, last, closed, nullptr);
        if (!ok || closed || tCloseAfter) break;
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ok;
}

}  // namespace zp::moeserver
