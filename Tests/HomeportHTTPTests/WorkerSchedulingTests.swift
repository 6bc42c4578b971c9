import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

#if os(Linux)
    import Glibc

    private let batchPolicy = 3
    private let idlePolicy = 5

    /// The policies of the threads libmicrohttpd started since `before` was taken, once `count`
    /// of them have named themselves (each does, just after it starts), or after 5 seconds.
    private func newWorkers(since before: Set<Int>, count: Int) -> [Int] {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let found = ThreadTable.threads().filter { !before.contains($0.key) && $0.value.name == "MHD-worker" }
            if found.count >= count || ContinuousClock.now > deadline { return found.map(\.value.policy) }
            usleep(10_000)
        }
    }

    @Suite("Worker threads are scheduled as configured", .serialized)
    struct WorkerSchedulingTests {
        @Test("batch: every worker thread runs SCHED_BATCH; the thread that started them keeps its own")
        func batchWorkers() throws {
            let before = Set(ThreadTable.threads().keys)
            var configuration = HTTPServerConfiguration(port: 0, workerThreads: 3)
            configuration.workerScheduling = .batch
            try withServer(sampleRouter(), configuration: configuration) { server in
                #expect(
                    newWorkers(since: before, count: 3) == [batchPolicy, batchPolicy, batchPolicy],
                    "\(ThreadTable.threads())")
                #expect(sched_getscheduler(0) == 0, "the starting thread is back to SCHED_OTHER")
                // The workers answer as ever.
                let answer = try RawHTTP.request(port: server.port, path: "/hello")
                #expect(answer.status == 200)
            }
            #expect(newWorkers(since: before, count: 0).isEmpty, "the workers are gone with the server")
        }

        @Test("normal, the default: the workers run the default policy")
        func normalWorkers() throws {
            #expect(HTTPServerConfiguration().workerScheduling == .normal)
            let before = Set(ThreadTable.threads().keys)
            try withServer(sampleRouter(), configuration: HTTPServerConfiguration(port: 0, workerThreads: 3)) { _ in
                #expect(newWorkers(since: before, count: 3) == [0, 0, 0], "\(ThreadTable.threads())")
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
                #expect(newWorkers(since: before, count: 2) == [idlePolicy, idlePolicy], "\(ThreadTable.threads())")
                #expect(sched_getscheduler(0) == Int32(idlePolicy), "the starting thread keeps its policy")
            }
        }
    }
#endif
