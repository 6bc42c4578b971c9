import Dispatch
import Foundation
import Synchronization
import Testing

@testable import HomeportLifecycle

private struct Failure: Error {}

/// Runs `body` on a thread of its own; the semaphore returned is signalled when it has returned.
private func onThread(_ body: @escaping @Sendable () -> Void) -> DispatchSemaphore {
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
        body()
        done.signal()
    }
    return done
}

@Suite("The repeating task")
struct RepeatingTaskTests {
    @Test("runs again and again; a run that throws is reported and the next one comes")
    func repeats() {
        let runs = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let thirdRun = DispatchSemaphore(value: 0)
        let task = RepeatingTask(
            "test.repeats", after: .milliseconds(1), every: .milliseconds(5),
            failed: { error in
                if error is Failure { failures.add(1, ordering: .relaxed) }
            }
        ) {
            let run = runs.add(1, ordering: .relaxed).newValue
            if run == 3 { thirdRun.signal() }
            if run == 1 { throw Failure() }
        }
        #expect(!task.isRunning)
        task.start()
        #expect(task.isRunning)
        #expect(thirdRun.wait(timeout: .now() + 30) == .success, "the first run threw; the others came anyway")
        task.stop()
        #expect(!task.isRunning)
        let failed = failures.load(ordering: .relaxed)
        #expect(failed == 1)
        // Stopped: no run comes any more.
        let after = runs.load(ordering: .relaxed)
        let idle = DispatchSemaphore(value: 0)
        _ = idle.wait(timeout: .now() + .milliseconds(50))
        let later = runs.load(ordering: .relaxed)
        #expect(later == after)
    }

    @Test("stop waits for the run in progress to end")
    func stopWaits() {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = Atomic<Bool>(false)
        let task = RepeatingTask("test.stop", after: .milliseconds(1), every: .seconds(3600), failed: { _ in }) {
            entered.signal()
            release.wait()
            finished.store(true, ordering: .sequentiallyConsistent)
        }
        task.start()
        #expect(entered.wait(timeout: .now() + 30) == .success)
        let stopped = onThread { task.stop() }
        // The run holds: stop does not return meanwhile.
        #expect(stopped.wait(timeout: .now() + .milliseconds(300)) == .timedOut)
        release.signal()
        #expect(stopped.wait(timeout: .now() + 30) == .success)
        let ended = finished.load(ordering: .sequentiallyConsistent)
        #expect(ended, "the run had ended when stop returned")
    }

    @Test("a task on a caller's queue runs there, after what the queue had to do")
    func callersQueue() {
        let queue = DispatchQueue(label: "test.caller")
        let key = DispatchSpecificKey<String>()
        queue.setSpecific(key: key, value: "caller")
        let seen = Mutex<String?>(nil)
        let ran = DispatchSemaphore(value: 0)
        let task = RepeatingTask(
            "test.queue", on: queue, after: .milliseconds(1), every: .seconds(3600), failed: { _ in }
        ) {
            seen.withLock { $0 = DispatchQueue.getSpecific(key: key) }
            ran.signal()
        }
        task.start()
        #expect(ran.wait(timeout: .now() + 30) == .success)
        task.stop()
        #expect(seen.withLock { $0 } == "caller")
    }

    @Test("durations become timer intervals of at least a millisecond")
    func intervals() {
        #expect(RepeatingTask.dispatch(.zero) == .nanoseconds(1_000_000))
        #expect(RepeatingTask.dispatch(.milliseconds(250)) == .nanoseconds(250_000_000))
        #expect(RepeatingTask.dispatch(.seconds(3600)) == .nanoseconds(3_600_000_000_000))
        #expect(RepeatingTask.dispatch(.seconds(Int64.max)) == .never)
    }
}

@Suite("The service thread")
struct ServiceThreadTests {
    @Test("wake ends a rest at once; stop ends it too, and waits for the body to return")
    func wakeAndStop() {
        let passes = Atomic<Int>(0)
        let passed = DispatchSemaphore(value: 0)
        let returned = Atomic<Bool>(false)
        let thread = ServiceThread("test.thread") { thread in
            while !thread.isStopping {
                passes.add(1, ordering: .relaxed)
                passed.signal()
                thread.rest(upTo: .seconds(3600))
            }
            returned.store(true, ordering: .sequentiallyConsistent)
        }
        thread.start()
        thread.start()  // once only
        #expect(passed.wait(timeout: .now() + 30) == .success)
        thread.wake()
        #expect(passed.wait(timeout: .now() + 30) == .success, "woken, the body ran a second pass within the hour")
        let stopped = onThread { thread.stop() }
        #expect(stopped.wait(timeout: .now() + 30) == .success, "stopped, the body left its hour-long rest")
        let bodyReturned = returned.load(ordering: .sequentiallyConsistent)
        let passCount = passes.load(ordering: .relaxed)
        #expect(bodyReturned, "the body had returned when stop returned")
        #expect(passCount == 2)
        thread.stop()  // a second stop does nothing
    }

    @Test("stop waits for a pass in progress, at most its timeout")
    func stopTimeout() {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let waiting = ServiceThread("test.waits") { _ in
            entered.signal()
            release.wait()
        }
        waiting.start()
        #expect(entered.wait(timeout: .now() + 30) == .success)
        let stopped = onThread { waiting.stop() }
        #expect(stopped.wait(timeout: .now() + .milliseconds(300)) == .timedOut, "the pass holds stop")
        release.signal()
        #expect(stopped.wait(timeout: .now() + 30) == .success)

        let stuck = ServiceThread("test.stuck", stopTimeout: .milliseconds(50)) { _ in
            entered.signal()
            release.wait()
        }
        stuck.start()
        #expect(entered.wait(timeout: .now() + 30) == .success)
        let gaveUp = onThread { stuck.stop() }
        #expect(gaveUp.wait(timeout: .now() + 30) == .success, "stop gave up after its timeout")
        release.signal()
    }
}
