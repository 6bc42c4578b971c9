import Foundation

/// Resumes a continuation exactly once, with whichever result comes first (even one that
/// arrives before the continuation is attached).
final class ResumeOnce<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Value, any Error>?
    private var early: Result<Value, any Error>?
    private var done = false

    func attach(_ continuation: CheckedContinuation<Value, any Error>) {
        let result: Result<Value, any Error>? = lock.withLock {
            if let early {
                done = true
                return early
            }
            self.continuation = continuation
            return nil
        }
        if let result { continuation.resume(with: result) }
    }

    func resume(with result: Result<Value, any Error>) {
        let continuation: CheckedContinuation<Value, any Error>? = lock.withLock {
            guard !done else { return nil }
            guard let continuation = self.continuation else {
                if early == nil { early = result }
                return nil
            }
            done = true
            self.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }
}
