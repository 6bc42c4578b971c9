import Synchronization

/// Says that a sign-up started waiting for approval, to whoever listens (the application's
/// ``SignupQueue``, which notifies every admin). The account services call it where they mail
/// the newcomer that they wait; nothing listens in the command line.
final class NewcomerAnnouncer: Sendable {
    private let listener = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Calls `action` with the address of each sign-up that starts waiting, from now on.
    func listen(_ action: @escaping @Sendable (String) -> Void) {
        listener.withLock { $0 = action }
    }

    /// The sign-up of `email` waits for approval now (its transaction committed).
    func announce(email: String) {
        listener.withLock { $0 }?(email)
    }
}
