import Foundation
import HomeportWire

/// One person's account on this installation.
package struct Account: Sendable, Hashable {
    /// The numeric id.
    package var id: Int64
    /// The sign-in address, lowercased.
    package var email: String
    /// The PBKDF2 hash of the password (never the password).
    package var passwordHash: String
    /// Where the account stands.
    package var approval: Approval
    /// When it was created.
    package var createdAt: Date
    /// Whether the address is verified (a code mailed to it came back, an operator's `users
    /// verify`, or an import that said so), as the session reader read it with the session;
    /// `nil` where the account was read without it.
    package var emailVerified: Bool? = nil
    /// The groups it belongs to, by name, as the session reader read them with the session;
    /// `nil` where the account was read without them.
    package var groups: [String]? = nil

    /// Whether a password signs in to it: not Django's unusable password (`!…`), which an
    /// import or an identity provider's sign-up leaves until a reset sets one.
    var hasUsablePassword: Bool { !passwordHash.hasPrefix("!") }
}

/// An account's approval stage. Only `approved` accounts get a session.
package enum Approval: String, Sendable, CaseIterable {
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
package enum SignupPolicy: String, Sendable, CaseIterable {
    /// New accounts are approved at once.
    case open
    /// New accounts wait for `homeport-server users approve`.
    case approval
    /// Nobody can sign up.
    case closed
}

/// Checks and normalises sign-in addresses and passwords.
package enum Credentials {
    /// Shortest accepted password.
    package static let minimumPasswordLength = 8
    /// Longest accepted password (a bound on work per attempt).
    package static let maximumPasswordLength = 1024

    /// The address trimmed, in Unicode NFC and lowercased, or `nil` when it is not an address.
    ///
    /// The syntax is the one django-allauth (Django's validator) accepts for the local part, and
    /// a host name for the domain, in ASCII only: a dot-atom of letters, digits and
    /// the characters !#$%&'*+/=?^_`{|}~- before the one `@`, dot-separated labels of letters, digits and
    /// inner hyphens after it. So no list (`a@b.c,d`), no display name (`<a@b.c>`), no comment
    /// (`a@b.c(x)`), no quoting, and no look-alike: an invisible character (U+200B), a letter of
    /// another script (Cyrillic а) or a decomposed accent cannot make a second account that reads
    /// like the first. An internationalised domain is given in its `xn--` form.
    package static func normalizedEmail(_ text: String) -> String? {
        // Printable ASCII has no blank to trim and is its own NFC: the common case skips both.
        let trimmed =
            text.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
            ? text : text.trimmingCharacters(in: .whitespaces).precomposedStringWithCanonicalMapping
        guard (3...254).contains(trimmed.utf8.count), trimmed.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return nil
        }
        let email = trimmed.lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, isDotAtom(parts[0]), parts[0].utf8.count <= 64 else { return nil }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy(isHostLabel), labels.last?.allSatisfy(\.isNumber) == false else {
            return nil
        }
        return email
    }

    private static let atomSymbols = Set("!#$%&'*+/=?^_`{|}~-".utf8)

    private static func isDotAtom(_ text: Substring) -> Bool {
        let atoms = text.split(separator: ".", omittingEmptySubsequences: false)
        return atoms.allSatisfy { atom in
            !atom.isEmpty
                && atom.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                        || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || atomSymbols.contains(byte)
                }
        }
    }

    private static func isHostLabel(_ label: Substring) -> Bool {
        (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
            && label.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
            }
    }

    /// The problem with a new password, or `nil` when it is acceptable.
    package static func passwordProblem(_ password: String, param: String) -> FieldProblem? {
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
package typealias FieldProblem = AuthFieldError
