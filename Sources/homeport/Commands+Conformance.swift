import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let conformanceSpec = CommandSpec(
        name: "homeport conformance",
        summary: "Check the server at URL against the Homeport protocol, version 1, and print a pass/fail table.",
        arguments: [.init("URL", help: "The server's address, such as https://books.example.net.")],
        options: [
            .value(
                "email", "EMAIL",
                help: "A test account that exists and is approved: with it the session checks run, else they are "
                    + "skipped."),
            .flag(
                "password-stdin",
                help: "Read the test account's password from the first line of standard input (the only way to "
                    + "pass it); it is never printed."),
            .flag(
                "change-password",
                help: "Also check that a password change rotates the token: the password is changed to the second "
                    + "line of standard input, then back to the first."),
            .value(
                "mailbox", "DIR",
                help: "The directory the server's mail lands in (homeport-server --outbox DIR, or a maildir's new/): "
                    + "with it, verification by code is checked with a fresh address."),
            .value("timeout", "SECONDS", help: "Total deadline of each request.", default: "10"),
            .value(
                "ca-file", "PATH",
                help: "Trust the CAs in this PEM file instead of the system's (a server with a private CA). TLS is "
                    + "always verified."),
            .flag(
                "allow-http",
                help: "Allow a plain-HTTP URL (with --email, the password then crosses the network in clear)."),
            jsonOption, proxyOption,
        ],
        discussion: conformanceDiscussion)

    static var conformanceDiscussion: String {
        var text = "Checks, in the order they run (one row each):\n"
        for check in ConformanceCheck.all {
            text += "  \(check.id)\n" + wrap(check.explanation, indent: 6) + "\n"
        }
        text += """

            Results: pass; fail (the detail says what was seen instead); older-server (the identity route is \
            missing, 404: a server before Homeport's protocol, or a stock django-allauth, which a client keeps \
            single-address; rows that need the /api/v1 prefix say so too; not a failure); skipped (the check needs \
            --email, --change-password or --mailbox, or the server does not verify addresses by code).
            Every answer is read defensively: a web page, another content type, a body that is not JSON, a \
            redirect or no answer within --timeout is a failed row, never a crash. After 3 requests in a row \
            without an answer, the rest are not sent. The sessions the checks open are signed out at the end. \
            Passwords and session tokens are never printed. State in $HOMEPORT_HOME is neither read nor written.
            --json prints {url, protocolVersion, passed, counts, checks: [{id, title, result, detail}]}.
            Exit codes: 0 nothing failed, 1 a check failed, 2 bad command line.
            """
        return wrap(text, indent: 0)
    }

    static func conformance(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(conformanceSpec, arguments) else { return 0 }
        let email = parsed.options["email"]
        if email != nil && !parsed.flag("password-stdin") {
            throw UsageError("--email needs --password-stdin (passwords are never taken as arguments)")
        }
        if email == nil && (parsed.flag("password-stdin") || parsed.flag("change-password")) {
            throw UsageError(
                "--\(parsed.flag("password-stdin") ? "password-stdin" : "change-password") needs --email EMAIL "
                    + "(the test account)")
        }
        let timeout = try conformanceTimeout(parsed.options["timeout"])
        let caFile = try caFile(parsed)
        let address = try conformanceAddress(parsed.positionals[0], allowHTTP: parsed.flag("allow-http"))
        let proxy = try proxy(parsed)
        let account = try email.map { email in
            let password = try readSecret("password")
            guard parsed.flag("change-password") else {
                return ConformanceAccount(email: email, password: password, temporaryPassword: nil)
            }
            let temporary = try readSecret("second password (the second line, for --change-password)")
            guard temporary != password else {
                throw UsageError("--change-password needs a second password that differs from the first")
            }
            return ConformanceAccount(email: email, password: password, temporaryPassword: temporary)
        }
        #if os(Linux)
            let transport: any ClientTransport = CurlTransport(proxy: proxy, certificateAuthorities: caFile)
        #else
            let transport: any ClientTransport = URLSessionTransport(proxy: proxy)
        #endif
        // libcurl drops an empty header field; URLSession sends it, but trusts only the system's CAs.
        let privateCA = caFile != nil && address.url.hasPrefix("https:")
        let http = ConformanceHTTP(
            base: address.url, transport: transport,
            emptyHeaderTransport: privateCA ? nil : URLSessionTransport(proxy: proxy),
            deadline: .milliseconds(Int((timeout * 1000).rounded())))
        let report = ConformanceReport(
            url: address.url,
            rows: await ConformanceRun(http: http, account: account, mailbox: try mailbox(parsed)).run())
        if parsed.flag("json") {
            try printJSON(report.json)
        } else {
            report.lines.forEach(say)
        }
        return report.passed ? 0 : 1
    }

    /// `--mailbox`: a directory that exists.
    private static func mailbox(_ parsed: ParsedArguments) throws -> String? {
        guard let path = parsed.options["mailbox"] else { return nil }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw UsageError("--mailbox \(path) is not a directory")
        }
        return path
    }

    /// `--timeout`'s seconds: a number above 0, at most 600.
    private static func conformanceTimeout(_ text: String?) throws -> Double {
        guard let text else { return 10 }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds <= 600 else {
            throw UsageError("--timeout needs a number of seconds above 0 and at most 600, such as 10")
        }
        return seconds
    }

    /// The URL to check; a bad one, or plain HTTP without `--allow-http`, is a usage error.
    private static func conformanceAddress(_ text: String, allowHTTP: Bool) throws -> ServerAddress {
        do {
            return try ServerAddress(parsing: text, allowHTTP: allowHTTP)
        } catch ClientError.plainHTTPNotAllowed {
            throw UsageError("\(text) is plain HTTP: add --allow-http to check it anyway")
        } catch {
            throw UsageError("\(text) is not an http:// or https:// address such as https://books.example.net")
        }
    }

    /// `text` broken into lines of at most 100 columns, each starting with `indent` spaces and the
    /// line's own leading spaces (the line breaks already there are kept).
    private static func wrap(_ text: String, indent: Int) -> String {
        let margin = String(repeating: " ", count: indent)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let leading = String(line.prefix { $0 == " " })
            var lines: [String] = []
            var current = margin + leading
            for word in line.split(separator: " ") {
                if current.count + word.count + 1 > 100 && current.trimmingCharacters(in: .whitespaces) != "" {
                    lines.append(current)
                    current = margin + leading
                }
                current += (current.hasSuffix(" ") || current.isEmpty ? "" : " ") + word
            }
            lines.append(current)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
