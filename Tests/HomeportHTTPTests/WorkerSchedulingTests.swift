import Foundation
import HomeportHTTP
import HomeportTestSupport
import Testing

#if os(Linux)
    import Glibc

    /// The scheduling policy of each of this process's threads, by thread id
    /// (`/proc/self/task/TID/stat`, field 41).
    private func threadPolicies() -> [Int: Int] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        var policies: [Int: Int] = [:]
        for task in tasks {
            guard let id = Int(task),
                let stat = try? String(contentsOfFile: "/proc/self/task/\(task)/stat", encoding: .utf8),
                let close = stat.range(of: ")", options: .backwards)
            else { continue }
            // After the command's closing parenthesis: field 3 (the state) onwards.
            let fields = stat[close.upperBound...].split(separator: " ")
            if fields.count > 38, let policy = Int(fields[38]) { policies[id] = policy }
        }
        return policies
    }

    private let batchPolicy = 3

    @Suite("Worker threads are scheduled as configured", .serialized)
    struct WorkerSchedulingTests {
        @Test("batch: every worker thread, and only they, run SCHED_BATCH; the thread that started them keeps its own")
        func batchWorkers() throws {
            let before = Set(threadPolicies().filter { $0.value == batchPolicy }.keys)
            var configuration = HTTPServerConfiguration(port: 0, workerThreads: 3)
            configuration.workerScheduling = .batch
            try withServer(sampleRouter(), configuration: configuration) { server in
                let batch = Set(threadPolicies().filter { $0.value == batchPolicy }.keys).subtracting(before)
                #expect(batch.count == 3, "\(threadPolicies())")
                #expect(sched_getscheduler(0) == 0, "the starting thread is back to SCHED_OTHER")
                // The workers answer as ever.
                let answer = try RawHTTP.request(port: server.port, path: "/hello")
                #expect(answer.status == 200)
            }
            let after = Set(threadPolicies().filter { $0.value == batchPolicy }.keys).subtracting(before)
            #expect(after.isEmpty, "the workers are gone with the server")
        }

        @Test("normal, the default: no thread of the server runs SCHED_BATCH")
        func normalWorkers() throws {
            #expect(HTTPServerConfiguration().workerScheduling == .normal)
            let before = Set(threadPolicies().filter { $0.value == batchPolicy }.keys)
            try withServer(sampleRouter(), configuration: HTTPServerConfiguration(port: 0, workerThreads: 3)) { _ in
                #expect(Set(threadPolicies().filter { $0.value == batchPolicy }.keys).subtracting(before).isEmpty)
                #expect(threadPolicies().count >= 4)
            }
        }
    }
#endif
