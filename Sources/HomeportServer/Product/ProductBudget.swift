/// One rate-limited action of a product: at most ``limit`` per window, counted per account,
/// per client address, or both, in the same shared counters as Homeport's own budgets (so the
/// budget holds across every door and replica).
///
/// The operator can change it with `--rate-limits NAME=N/SECONDS`, like Homeport's own.
public struct ProductBudget: Sendable, Hashable {
    /// What a budget is counted by.
    public enum Key: Sendable, Hashable {
        /// The signed-in account.
        case account
        /// The client's address (an IPv6 client by its /64), the forwarded one behind a trusted proxy.
        case clientAddress
        /// Both: each has its own counter, and either one refuses.
        case accountAndClientAddress
    }

    /// Its name, such as `books-added-per-account`: lowercase letters, digits and `-`.
    public var name: String
    /// The default limit.
    public var limit: RateLimit
    /// What it is counted by.
    public var key: Key

    /// Declares a budget.
    public init(_ name: String, limit: RateLimit, per key: Key) {
        self.name = name
        self.limit = limit
        self.key = key
    }

    /// Whether `name` can name a budget: 1–64 of `a-z 0-9 -`.
    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || $0 == UInt8(ascii: "-")
            }
    }
}
