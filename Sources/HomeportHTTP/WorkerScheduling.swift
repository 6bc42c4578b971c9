import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// How the kernel schedules the server's worker threads.
package enum WorkerScheduling: String, Sendable, CaseIterable {
    /// The system's default policy: a request's arrival may preempt the process that sent it.
    case normal
    /// Linux's `SCHED_BATCH`: a worker woken by a request does not preempt the process that sent
    /// it. A reverse proxy on the same cores then finishes what it was doing and the worker takes
    /// the requests waiting in one pass, instead of the two trading the core at every request.
    /// Meant for a server reached through a proxy on its own host; elsewhere it is ignored.
    /// Threads a worker starts inherit it (libdispatch starts its pool's threads from the thread
    /// that first queues work); the handler pool's threads (password hashing) do not.
    case batch
}

extension WorkerScheduling {
    /// `SCHED_BATCH` of `<sched.h>`, which Glibc's module leaves out (it is a GNU extension).
    static let linuxBatchPolicy: Int32 = 3
    /// `SCHED_OTHER`, the default.
    static let linuxDefaultPolicy: Int32 = 0

    /// Runs `body` (which starts threads) with the calling thread under this policy, so that the
    /// threads it starts inherit it, then puts the calling thread's own policy back. Only from
    /// the default policy: a policy the operator chose for the process (`chrt`, systemd's
    /// `CPUSchedulingPolicy=`) is kept, since a real-time one, once left, could not be taken back
    /// without privilege. A policy the system refuses leaves the threads as they were.
    func whileStartingThreads<Result>(_ body: () -> Result) -> Result {
        #if os(Linux)
            guard self == .batch else { return body() }
            let thread = pthread_self()
            var policy: Int32 = 0
            var parameters = sched_param()
            guard pthread_getschedparam(thread, &policy, &parameters) == 0, policy == Self.linuxDefaultPolicy else {
                return body()
            }
            var batch = sched_param()
            batch.sched_priority = 0
            guard pthread_setschedparam(thread, Self.linuxBatchPolicy, &batch) == 0 else { return body() }
            defer { pthread_setschedparam(thread, policy, &parameters) }
            return body()
        #else
            return body()
        #endif
    }
}
