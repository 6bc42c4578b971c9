import Foundation
import HomeportTestSupport
import Testing

@Suite(
    "Every suite says what it needs: a slice without the PostgreSQL cluster or processes can run alone", .tags(.docs))
struct SuiteTagTests {
    /// What a test file's code says about what it needs, and the tag that says so.
    private static let needs: [(tag: String, pattern: String)] = [
        (
            "process",
            #"ServerProcess|Process\(\)|StandIn\(|AllauthPeer|SMTPRelay\(|ReverseProxy\.|NginxProxy|NginxPushService|TestCertificates\(|TLSListener|\.spawn\(|runClient|runProgram"#
        ),
        ("postgres", #"\.postgres\b|Backend\.allCases|TestPostgres"#),
        ("interop", #"AllauthPeer|APNsStandIn|WebPushStandIn|FCMStandIn|OIDCStandIn"#),
    ]

    /// A suite's attribute: what comes after `@Suite` up to the type it marks.
    private static func attribute(_ text: String) -> Substring {
        let end = text.range(of: #"\b(struct|class|enum|actor)\s"#, options: .regularExpression)?.lowerBound
        return text[..<(end ?? text.endIndex)]
    }

    @Test("a file whose tests start processes, use PostgreSQL or a checked stand-in tags every suite in it so")
    func tagged() throws {
        let tests = URL(fileURLWithPath: repositoryFile("Tests"))
        let targets = try FileManager.default.contentsOfDirectory(atPath: tests.path).filter { $0.hasSuffix("Tests") }
        var checked = 0
        var missing: [String] = []
        for target in targets {
            let folder = tests.appendingPathComponent(target)
            for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift")
            {
                // This file names the patterns it looks for.
                guard file != "SuiteTagTests.swift" else { continue }
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                let suites = text.components(separatedBy: "@Suite").dropFirst()
                for (tag, pattern) in Self.needs where text.range(of: pattern, options: .regularExpression) != nil {
                    checked += 1
                    for suite in suites where !Self.attribute(suite).contains(".\(tag)") {
                        missing.append("\(target)/\(file): a suite without .\(tag)")
                    }
                }
            }
        }
        #expect(checked > 100, "the patterns still find what the suites use")
        #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
    }
}
