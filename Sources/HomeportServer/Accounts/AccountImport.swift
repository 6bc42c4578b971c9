import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportWire

/// Accounts brought from another system (`homeport-server users import FILE`): JSON lines of
/// `{"email", "passwordHash", "verified", "stage", "createdAt"}`, all taken or none.
///
/// A password hash is stored as it is when Homeport can check it: Django's `pbkdf2_sha256$…`
/// (Homeport's own format), bcrypt (`$2b$…`, Django's `bcrypt$…` and `bcrypt_sha256$…`, checked
/// through libcrypt), or Django's unusable password (`!…`, or `null`: the person signs in after
/// a password reset). Every hash that is not at the configured cost is rehashed at the account's
/// first successful sign-in.
package struct AccountImport: Sendable {
    /// One account to make.
    package struct Entry: Sendable, Hashable {
        /// The line it came from (1 is the first).
        package var line: Int
        /// The normalised address.
        package var email: String
        /// The stored hash.
        package var passwordHash: String
        /// Whether the address was verified.
        package var verified: Bool
        /// Its approval stage.
        package var approval: Approval
        /// When it was made, in Unix seconds.
        package var createdAt: Int64
    }

    /// What is wrong with one line.
    package struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line (1 is the first).
        package var line: Int
        /// What is wrong, naming the field.
        package var message: String

        /// `line N: …`.
        package var description: String { "line \(line): \(message)" }
    }

    /// The accounts, in the file's order.
    package let entries: [Entry]

    /// The most problems reported for one file.
    static let reportedProblems = 20

    /// Reads JSON lines; blank lines are skipped, and so is a UTF-8 byte-order mark at the start
    /// of the file (anywhere else it is a wrong line). A password hash costlier than `ceiling`
    /// is a wrong line. Throws every problem found (up to 20), each with its line number, when
    /// any line is wrong.
    package init(jsonLines data: Data, now: Int64, ceiling: HashCeiling = .standard) throws {
        var entries: [Entry] = []
        var problems: [Problem] = []
        var lineOf: [String: Int] = [:]
        let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]
        let text = data.starts(with: byteOrderMark) ? data.dropFirst(3) : data[...]
        for (index, raw) in text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            guard problems.count < Self.reportedProblems else { break }
            let line = raw.last == UInt8(ascii: "\r") ? raw.dropLast() : raw
            guard !line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else { continue }
            do {
                guard !line.starts(with: byteOrderMark) else {
                    throw Problem(
                        line: number, message: "a byte-order mark: one is taken only at the start of the file")
                }
                let entry = try Self.entry(Data(line), line: number, now: now, ceiling: ceiling)
                if let first = lineOf[entry.email] {
                    throw Problem(line: number, message: "email: \(entry.email) is on line \(first) too")
                }
                lineOf[entry.email] = number
                entries.append(entry)
            } catch let problem as Problem {
                problems.append(problem)
            }
        }
        guard problems.isEmpty else { throw AccountImportFailure(problems: problems) }
        self.entries = entries
    }

    private static func entry(_ line: Data, line number: Int, now: Int64, ceiling: HashCeiling) throws -> Entry {
        let fail = { (message: String) in Problem(line: number, message: message) }
        guard let object = try? JSONDecoder().decode([String: Field].self, from: line) else {
            throw fail("not a JSON object of strings, numbers, booleans and nulls")
        }
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(line)) else {
            throw fail("a field is named twice (other tools would read the other one)")
        }
        let known: Set<String> = ["email", "passwordHash", "verified", "stage", "createdAt"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail("\(unknown): not a field (use email, passwordHash, verified, stage, createdAt)")
        }
        guard case .string(let text) = object["email"] else { throw fail("email: required, a string") }
        guard let email = Credentials.normalizedEmail(text) else {
            throw fail("email: '\(text.prefix(80))' is not an address Homeport takes")
        }
        let hash: String
        switch object["passwordHash"] {
        case nil, .null: hash = "!"
        case .string(let text):
            guard PasswordHasher.isImportable(text) else {
                throw fail(
                    "passwordHash: not a hash Homeport checks (pbkdf2_sha256$…, bcrypt $2b$…, bcrypt$…, bcrypt_sha256$…, or ! for none)"
                )
            }
            if let cost = HashCost(of: text), !ceiling.allows(cost) {
                throw fail(
                    "passwordHash: \(cost) costs more than a sign-in may (at most \(ceiling), --max-import-cost): "
                        + "one wrong password would hold a password thread that long. Rehash it at the source "
                        + "at a lower cost, or import the account with \"passwordHash\": null (it signs in after "
                        + "a password reset)")
            }
            hash = text
        default: throw fail("passwordHash: a string or null")
        }
        let verified: Bool
        switch object["verified"] {
        case nil: verified = false
        case .bool(let flag): verified = flag
        default: throw fail("verified: true or false")
        }
        let approval: Approval
        switch object["stage"] {
        case nil: approval = .approved
        case .string(let text):
            guard let stage = Approval(rawValue: text) else {
                throw fail("stage: '\(text.prefix(40))' is not approved, waiting, rejected or held")
            }
            approval = stage
        default: throw fail("stage: approved, waiting, rejected or held")
        }
        let createdAt: Int64
        switch object["createdAt"] {
        case nil: createdAt = now
        case .string(let text):
            guard let date = Self.date(text) else {
                throw fail("createdAt: '\(text.prefix(40))' is not an ISO 8601 time such as 2024-05-01T09:30:00Z")
            }
            createdAt = Int64(date.timeIntervalSince1970)
        case .number(let number):
            guard number.isFinite, number >= 0, number < 1e12, case let seconds = Int64(number.rounded(.down)) else {
                throw fail("createdAt: Unix seconds, 0 or more")
            }
            createdAt = seconds
        default: throw fail("createdAt: an ISO 8601 time or Unix seconds")
        }
        return Entry(
            line: number, email: email, passwordHash: hash, verified: verified, approval: approval,
            createdAt: createdAt)
    }

    /// A field's value, as JSON spells it.
    enum Field: Decodable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case null

        init(from decoder: any Decoder) throws {
            let value = try decoder.singleValueContainer()
            if value.decodeNil() {
                self = .null
            } else if let flag = try? value.decode(Bool.self) {
                self = .bool(flag)
            } else if let number = try? value.decode(Double.self) {
                self = .number(number)
            } else {
                self = .string(try value.decode(String.self))
            }
        }
    }

    /// ISO 8601, with or without fractions of a second (Django's `date_joined` has microseconds).
    private static func date(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return plain.date(from: text) ?? fractional.date(from: text)
    }

    /// Makes every account in one transaction; throws, and makes none, when an address is taken.
    /// Returns how many were made.
    @discardableResult
    package func apply(to database: any Database, now: Int64) throws -> Int {
        try database.transaction { db in
            var problems: [Problem] = []
            let accounts = AccountStore(db)
            for entry in entries {
                guard
                    let account = try accounts.create(
                        email: entry.email, passwordHash: entry.passwordHash, approval: entry.approval,
                        at: entry.createdAt)
                else {
                    problems.append(Problem(line: entry.line, message: "email: an account already uses \(entry.email)"))
                    if problems.count == Self.reportedProblems { break }
                    continue
                }
                if entry.verified { try EmailVerificationStore(db).markVerified(userID: account.id, now: now) }
                if !entry.passwordHash.hasPrefix("!") { try accounts.markImportedHash(id: account.id) }
            }
            guard problems.isEmpty else { throw AccountImportFailure(problems: problems) }
            return entries.count
        }
    }
}

/// Why a file was not imported: every problem found, by line; nothing was imported.
package struct AccountImportFailure: Error, Sendable, CustomStringConvertible {
    /// The problems, by line.
    package var problems: [AccountImport.Problem]

    /// One problem a line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}
