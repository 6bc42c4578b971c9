import Foundation

/// Where session tokens live, each bound to the server it belongs to. Only session credentials
/// are ever stored: never a password, a TOTP secret or a recovery code.
public protocol CredentialVault: Sendable {
    /// Stores (replacing) the session token of `server`.
    func store(token: String, for server: String) throws
    /// The session token of `server`, if any.
    func token(for server: String) throws -> String?
    /// Erases the session token of `server`.
    func remove(server: String) throws
}
