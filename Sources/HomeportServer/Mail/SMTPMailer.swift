import CCurl
import Foundation
import HomeportCrypto
import HomeportCurl

/// Where and how mail goes out over SMTP.
package struct SMTPSettings: Sendable, Equatable {
    /// `smtp://[USER@]HOST:PORT` (STARTTLS when the server offers it) or `smtps://…` (TLS from the
    /// first byte).
    package var url: String
    /// The sender address (`From:` and the envelope's).
    package var from: String
    /// The password for the URL's user, read from a secret file; never logged.
    package var password: String?
    /// Refuse to send over `smtp://` unless the server offers STARTTLS.
    package var requireStartTLS: Bool
    /// How long one delivery may take, connecting included.
    package var timeoutSeconds: Int
    /// A CA to trust besides the system's (a test relay); `nil` in production.
    package var caFile: String?

    /// Creates settings.
    package init(
        url: String, from: String, password: String? = nil, requireStartTLS: Bool = false, timeoutSeconds: Int = 30,
        caFile: String? = nil
    ) {
        self.url = url
        self.from = from
        self.password = password
        self.requireStartTLS = requireStartTLS
        self.timeoutSeconds = timeoutSeconds
        self.caFile = caFile
    }
}

/// Why an SMTP delivery failed, and whether trying again may help.
struct SMTPFailure: Error, CustomStringConvertible {
    /// What happened, without the recipient's address.
    var reason: String
    /// A refusal that will not change (a 5xx answer, a bad address): no retry.
    var permanent: Bool

    var description: String { reason }
}

/// Sends mail through an SMTP relay with libcurl. Used by `MailSender` from its own thread: a
/// request only queues its mail.
package struct SMTPMailer: Mailer {
    /// The relay and the sender.
    package let settings: SMTPSettings
    /// The host mail ids are made under (`Message-ID: <random@host>`).
    let messageHost: String

    /// A mailer for `settings`; `messageHost` names the installation in Message-IDs.
    package init(settings: SMTPSettings, messageHost: String) {
        self.settings = settings
        self.messageHost = messageHost
    }

    /// SMTP mail is queued and sent by `MailSender`.
    package var queues: Bool { true }

    /// Sends one mail now, waiting for the relay's answer; throws `SMTPFailure`.
    package func send(_ mail: Mail) throws {
        guard !mail.to.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "<" || $0 == ">" }) else {
            throw SMTPFailure(reason: "the address is not one", permanent: true)
        }
        guard let easy = CurlEasy() else { throw SMTPFailure(reason: "libcurl failed", permanent: false) }
        let message = Message(bytes: Array(try render(mail).utf8))
        let recipients = CurlHeaderList(["<\(mail.to)>"])
        easy.set(CURLOPT_URL, settings.url)
        easy.set(CURLOPT_PROTOCOLS_STR, "smtp,smtps")
        easy.set(CURLOPT_MAIL_FROM, "<\(settings.from)>")
        easy.set(CURLOPT_MAIL_RCPT, recipients)
        easy.set(CURLOPT_UPLOAD, 1)
        easy.set(CURLOPT_USE_SSL, Int(settings.requireStartTLS ? CURLUSESSL_ALL.rawValue : CURLUSESSL_TRY.rawValue))
        easy.limit(seconds: settings.timeoutSeconds)
        easy.set(CURLOPT_NOSIGNAL, 1)
        if let password = settings.password { easy.set(CURLOPT_PASSWORD, password) }
        if let caFile = settings.caFile { easy.set(CURLOPT_CAINFO, caFile) }
        let context = Unmanaged.passRetained(message)
        defer { context.release() }
        easy.set(CURLOPT_READDATA, pointer: context.toOpaque())
        _ = homeport_curl_set_read_function(easy.handle, smtpReadCallback)
        let code = withExtendedLifetime(recipients) { easy.perform() }
        guard code != CURLE_OK else { return }
        let answer = easy.status
        let what = CurlLibrary.describe(code)
        throw SMTPFailure(
            reason: answer > 0 ? "\(what) (the relay answered \(answer))" : what,
            // A refusal, bad credentials, or a relay without the STARTTLS it must offer will not
            // mend by itself in minutes.
            permanent: answer >= 500 || code == CURLE_LOGIN_DENIED || code == CURLE_USE_SSL_FAILED)
    }

    /// The RFC 5322 message: `From`, `To`, `Date`, `Message-ID`, `Subject` (encoded when not
    /// ASCII), a UTF-8 plain-text body with CRLF line ends.
    func render(_ mail: Mail, now: Date = Date()) throws -> String {
        let id = Digest.hex(try SystemRandom().bytes(12))
        let subject =
            mail.subject.allSatisfy { $0.isASCII && $0 != "\r" && $0 != "\n" }
            ? mail.subject : "=?utf-8?B?\(Data(mail.subject.utf8).base64EncodedString())?="
        let lines = [
            "From: \(settings.from)", "To: \(mail.to)", "Date: \(Self.date(now))",
            "Message-ID: <\(id)@\(messageHost)>", "Subject: \(subject)", "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit",
            "X-Homeport-Kind: \(mail.kind)", "",
        ]
        let body = mail.body.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\n", with: "\r\n")
        return lines.joined(separator: "\r\n") + "\r\n" + body + "\r\n"
    }

    /// RFC 5322's date: `Mon, 30 Nov 2026 06:49:47 +0000`.
    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        return formatter.string(from: date)
    }
}

/// The message libcurl uploads, read in pieces.
private final class Message {
    let bytes: [UInt8]
    var sent = 0

    init(bytes: [UInt8]) { self.bytes = bytes }
}

/// libcurl's read callback: the next piece of the message.
private let smtpReadCallback: @convention(c) (UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?) -> Int =
    { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let message = Unmanaged<Message>.fromOpaque(context).takeUnretainedValue()
        let length = min(size * count, message.bytes.count - message.sent)
        guard length > 0 else { return 0 }
        message.bytes.withUnsafeBufferPointer { source in
            UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + message.sent, byteCount: length)
        }
        message.sent += length
        return length
    }
