import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire

/// What a product's handlers and tasks work with: the server's database, notifications,
/// identity, clock, logger and the product's budgets.
public struct ProductServices: Sendable {
    /// The database (Homeport's tables and the product's, one transaction can span both).
    public let database: any Database
    /// Notifications: `notify` logs one for the in-app stream and queues its pushes (and that
    /// is all a product may do with them).
    public let notifications: PushCenter
    /// The installation identity, read through ``instanceID()``.
    package let identity: IdentityStore
    /// The wall clock (a test's manual clock, when one is injected).
    public let clock: any WallClock
    /// The product's logger, labelled with its name.
    public let logger: Logger
    /// Each budget's limit in force (the declared default, or the operator's override).
    public let budgets: [String: (limit: RateLimit, key: ProductBudget.Key)]

    /// The installation's public instance id (the `s` of every push it sends).
    public func instanceID() throws -> InstanceID {
        try identity.instanceID()
    }

    /// Charges one `budget` action to `caller` (its account, its client address, or both, as the
    /// budget declares), in the counters every door and replica share, at the limit in force (the
    /// declared one, or the operator's). Past the limit it throws 429 `rate_limited` with
    /// `Retry-After`, and the action should do nothing. A budget the product did not declare is
    /// its mistake: 500, logged.
    public func charge(_ budget: ProductBudget, _ caller: SignedIn) throws {
        try charge(budget.name, accountID: caller.accountID, clientAddress: caller.clientAddress)
    }

    /// Charges one `budget` action to a client address, for a route without a session (the
    /// budget must be counted by client address only).
    public func charge(_ budget: ProductBudget, clientAddress: String) throws {
        try charge(budget.name, accountID: nil, clientAddress: clientAddress)
    }

    private func charge(_ budget: String, accountID: Int64?, clientAddress: String) throws {
        // A product's mistake, not the client's: a 500 that the log explains, never a crash.
        guard let (limit, key) = budgets[budget] else {
            logger.error("a handler charged a budget the product does not declare", metadata: ["budget": budget])
            throw HTTPError.internalError
        }
        var keys: [String] = []
        if key != .clientAddress {
            guard let accountID else {
                logger.error(
                    "a route without a session charged a budget counted by account", metadata: ["budget": budget])
                throw HTTPError.internalError
            }
            keys.append("account:\(accountID)")
        }
        if key != .account { keys.append("ip:" + RateLimiter.clientKey(clientAddress)) }
        do {
            try RateLimiter(database, policy: RateLimitPolicy()).charge(
                Budget(product: budget, limit: limit), keys, now: clock.unixSeconds)
        } catch let refusal as RateLimiter.Refusal {
            throw HTTPError(
                status: 429, code: APIErrorCode.rateLimited,
                message: "Too many requests of this kind; try again later.",
                headers: ["Retry-After": String(refusal.retryAfter)])
        }
    }
}
