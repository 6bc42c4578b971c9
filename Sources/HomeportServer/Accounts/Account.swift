import Foundation
import HomeportWire

/// One person's account on this installation.
public struct Account: Sendable, Hashable {
    /// The numeric id.
    public var id: Int64
    /// The sign-in address, lowercased.
    public var email: String
    /// The PBKDF2 hash of the password (never the password).
    public var passwordHash: String
    /// Where the account stands.
    public var approval: Approval
    /// When it was created.
    public var createdAt: Date
}

/// An account's approval stage. Only `approved` accounts get a session.
public enum Approval: String, Sendable, CaseIterable {
    /// May sign in.
    case approved
    /// Waits for an operator.
    case waiting
    /// Refused by an operator (told `waiting`, so a refusal is not announced).
    case rejected
    /// Put on hold by an operator.
    case held
}

/// Whether new accounts may sign in at once or wait for an operator.
public enum SignupPolicy: String, Sendable, CaseIterable {
    /// New accounts are approved at once.
    case open
    /// New accounts wait for `homeport-server users approve`.
    case approval
    /// Nobody can sign up.
    case closed
}

/// Checks and normalises sign-in addresses and passwords.
public enum Credentials {
    /// Shortest accepted password.
    public static let minimumPasswordLength = 8
    /// Longest accepted password (a bound on work per attempt).
    public static let maximumPasswordLength = 1024

    /// The address lowercased and trimmed, or `nil` when it is not an address.
    public static func normalizedEmail(_ text: String) -> String? {
        let email = text.trimmingCharacters(in: .whitespaces).lowercased()
        // No whitespace and no control character (NUL would be cut by the database, ESC would
        // reach an operator's terminal).
        guard email.utf8.count <= 254,
            !email.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || (0x7F...0x9F).contains($0.value)
            })
        else { return nil }
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64 else { return nil }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.utf8.count <= 63 }) else { return nil }
        return email
    }

    /// The problem with a new password, or `nil` when it is acceptable.
    public static func passwordProblem(_ password: String, param: String) -> FieldProblem? {
        if password.unicodeScalars.contains(where: { $0.value == 0 }) {
            return FieldProblem(code: "invalid", param: param, message: "A password cannot contain a NUL character.")
        }
        if password.count < minimumPasswordLength {
            return FieldProblem(
                code: "password_too_short", param: param,
                message: "This password is too short. It must contain at least \(minimumPasswordLength) characters.")
        }
        if password.utf8.count > maximumPasswordLength {
            return FieldProblem(
                code: "password_too_long", param: param,
                message: "This password is too long. It must contain at most \(maximumPasswordLength) bytes.")
        }
        return nil
    }
}

/// A problem with one field of a request: the same shape the app door sends in `errors[]`.
public typealias FieldProblem = AuthFieldError
