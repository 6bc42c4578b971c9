import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

#if os(Linux)
    import Glibc

    private let batchPolicy = 3
    private let idlePolicy = 5

    /// How many threads libmicrohttpd started since `before` was taken run `policy`, once `count`
    /// of them do (each worker names itself just after it starts), or after 5 seconds.
    ///
    /// Other suites start servers in this process at the same time, with workers of the default
    /// policy, so a test counts the workers of the policy it expects rather than every new one.
    private func newWorkers(since before: Set<Int>, policy: Int, count: Int) -> Int {
        var found = 0
        eventually(timeout: .seconds(5), every: .milliseconds(10)) {
            found =
                ThreadTable.threads().filter {
                    !before.contains($0.key) && $0.value.name == "MHD-worker" && $0.value.policy == policy
                }.count
            return found >= count
        }
        return found
    }

    @Suite("Worker threads are scheduled as configured", .serialized)
    struct WorkerSchedulingTests {
        @Test("batch: every worker thread runs SCHED_BATCH; the thread that started them keeps its own")
        func batchWorkers() throws {
            let before = Set(ThreadTable.threads().keys)
            var configuration = HTTPServerConfiguration(port: 0, workerThreads: 3)
            configuration.workerScheduling = .batch
            try withServer(sampleRouter(), configuration: configuration) { server in
                #expect(newWorkers(since: before, policy: batchPolicy, count: 3) == 3, "\(ThreadTable.threads())")
                #expect(sched_getscheduler(0) == 0, "the starting thread is back to SCHED_OTHER")
                // The workers answer as ever.
                let answer = try RawHTTP.request(port: server.port, path: "/hello")
                #expect(answer.status == 200)
            }
            // A thread joined is listed in /proc a moment longer on a busy machine.
            #expect(
                eventually(timeout: .seconds(5)) { newWorkers(since: before, policy: batchPolicy, count: 0) == 0 },
                "the workers are gone with the server")
        }

        @Test("normal, the default: the workers run the default policy")
        func normalWorkers() throws {
            #expect(HTTPServerConfiguration().workerScheduling == .normal)
            let before = Set(ThreadTable.threads().keys)
            try withServer(sampleRouter(), configuration: HTTPServerConfiguration(port: 0, workerThreads: 3)) { _ in
                #expect(newWorkers(since: before, policy: 0, count: 3) >= 3, "\(ThreadTable.threads())")
                #expect(newWorkers(since: before, policy: batchPolicy, count: 0) == 0, "no worker runs SCHED_BATCH")
            }
        }

        @Test("a policy the operator gave the process is kept: batch changes nothing under SCHED_IDLE")
        func operatorPolicyKept() throws {
            var parameters = sched_param()
            try #require(pthread_setschedparam(pthread_self(), Int32(idlePolicy), &parameters) == 0)
            defer { _ = pthread_setschedparam(pthread_self(), 0, &parameters) }
            let before = Set(ThreadTable.threads().keys)
            var configuration = HTTPServerConfiguration(port: 0, workerThreads: 2)
            configuration.workerScheduling = .batch
            try withServer(sampleRouter(), configuration: configuration) { _ in
                #expect(newWorkers(since: before, policy: idlePolicy, count: 2) == 2, "\(ThreadTable.threads())")
                #expect(newWorkers(since: before, policy: batchPolicy, count: 0) == 0, "no worker runs SCHED_BATCH")
                #expect(sched_getscheduler(0) == Int32(idlePolicy), "the starting thread keeps its policy")
            }
        }
    }
#endif
