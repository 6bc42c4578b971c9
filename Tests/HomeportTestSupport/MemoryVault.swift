import Foundation
import HomeportClient

/// A vault in memory, for tests.
public final class MemoryVault: CredentialVault, @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [String: String] = [:]

    /// Creates an empty vault.
    public init() {}

    /// Stores the token.
    public func store(token: String, for server: String) throws { lock.withLock { tokens[server] = token } }
    /// The token.
    public func token(for server: String) throws -> String? { lock.withLock { tokens[server] } }
    /// Erases the token.
    public func remove(server: String) throws { _ = lock.withLock { tokens.removeValue(forKey: server) } }
}
