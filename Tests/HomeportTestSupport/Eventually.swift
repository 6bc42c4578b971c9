import Foundation

/// Checks `condition` every `interval` until it holds or `timeout` has passed; true when it held.
///
/// For what a test waits on that nothing signals: a row another thread deletes, a file another
/// process writes, a port that closes. Whatever the test can be told of (a semaphore, a line on
/// a stream) it waits for instead.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(20), _ condition: () throws -> Bool
) rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        Thread.sleep(
            forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
    }
}

/// The same for an async test: between checks it suspends, giving its thread back to the
/// cooperative pool (two threads on a two-core machine) rather than holding it. It runs on the
/// caller's actor, so a test on the main actor can look at its main-actor state.
@discardableResult
public func eventually(
    timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(20),
    isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while true {
        if try await condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        try? await Task.sleep(for: interval)
    }
}
