import Foundation
import HomeportCrypto

/// One outgoing mail.
package struct Mail: Sendable, Hashable {
    /// The recipient.
    package var to: String
    /// The subject line.
    package var subject: String
    /// The plain-text body.
    package var body: String
    /// What the mail is for (`password_reset`, `unknown_account`, `signup_waiting`), for logs.
    package var kind: String

    /// Creates a mail.
    package init(to: String, subject: String, body: String, kind: String) {
        self.to = to
        self.subject = subject
        self.body = body
        self.kind = kind
    }
}

/// Sends mail. A failed send throws; callers record the failure so `standing` can report it.
package protocol Mailer: Sendable {
    /// Sends one mail.
    func send(_ mail: Mail) throws
    /// Whether a request only queues its mail (sent later by `MailSender`, off the request's
    /// thread, kept across a restart) instead of sending it at once.
    var queues: Bool { get }
}

extension Mailer {
    /// Sent at once, by default.
    package var queues: Bool { false }
}

/// Writes each mail as an RFC 5322 `.eml` file into a directory (the default: an operator or
/// a mail relay picks them up from there).
package struct OutboxMailer: Mailer {
    /// The outbox directory.
    package let directory: String
    /// The sender address.
    package let from: String

    /// Creates a mailer writing to `directory` (created on first use, mode 0700).
    package init(directory: String, from: String = "homeport@localhost") {
        self.directory = directory
        self.from = from
    }

    /// Writes the mail atomically (a temporary file, then a rename).
    package func send(_ mail: Mail) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let name = "\(Int(Date().timeIntervalSince1970 * 1000))-\(Digest.hex(try SystemRandom().bytes(6)))"
        let text = """
            From: \(from)\r
            To: \(mail.to)\r
            Subject: \(mail.subject)\r
            X-Homeport-Kind: \(mail.kind)\r
            Content-Type: text/plain; charset=utf-8\r
            \r
            \(mail.body.replacingOccurrences(of: "\n", with: "\r\n"))\r

            """
        let temporary = directory + "/." + name + ".tmp"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        try FileManager.default.moveItem(atPath: temporary, toPath: directory + "/" + name + ".eml")
    }
}
