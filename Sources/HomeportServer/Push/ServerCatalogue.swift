import Foundation
import HomeportCrypto
import HomeportWire

/// One code of the catalogue.
public typealias CatalogueCode = NotificationCatalogue.Code

/// The server's notification catalogue: the built-in codes and those the operator (or a product
/// embedding the server) adds, with a version that is a hash of the content, so that every
/// replica with the same catalogue answers the same version.
package struct ServerCatalogue: Sendable, Hashable {
    /// The code of the test notification (`POST /api/v1/push/test`).
    package static let testCode = "homeport/core:push.test"

    /// The catalogue as the wire shows it.
    package let answer: NotificationCatalogue

    /// The built-in codes and `extra` (an extra code replaces a built-in one of the same name).
    package init(extra: [CatalogueCode] = []) {
        var byCode: [String: String] = [
            Self.testCode: "Test notification", SignupQueue.waitingCode: "A sign-up is waiting for approval",
        ]
        for code in extra { byCode[code.code] = code.title }
        let codes = byCode.keys.sorted().map { CatalogueCode(code: $0, title: byCode[$0] ?? "") }
        let canonical = codes.map { "\($0.code)\u{0}\($0.title)\n" }.joined()
        answer = NotificationCatalogue(version: String(Digest.sha256Hex(canonical).prefix(16)), codes: codes)
    }

    /// The version (the `ETag`, and `mv` in payloads).
    package var version: String { answer.version }

    /// Whether `code` is in the catalogue.
    package func contains(_ code: String) -> Bool {
        answer.codes.contains { $0.code == code }
    }

    /// Reads extra codes from a JSON file: `{"codes": [{"code": "ns:name", "title": "…"}, …]}`.
    /// Throws a sentence that names what is wrong.
    package static func codes(fromFile path: String) throws -> [CatalogueCode] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigurationError("cannot read the catalogue file \(path): \(error.localizedDescription)")
        }
        struct File: Decodable { var codes: [CatalogueCode] }
        guard let file = try? JSONDecoder().decode(File.self, from: data) else {
            throw ConfigurationError(
                "\(path) is not a catalogue: expected {\"codes\": [{\"code\": \"namespace:name\", \"title\": \"…\"}]}")
        }
        for code in file.codes {
            if let problem = problem(code) { throw ConfigurationError("\(path): \(problem)") }
        }
        return file.codes
    }

    /// What is wrong with `code`, in a sentence; `nil` when nothing is.
    package static func problem(_ code: CatalogueCode) -> String? {
        guard isCode(code.code) else {
            return
                "'\(code.code.prefix(80))' is not a code: use namespace:name, such as homeport/core:chat.turn-ended"
        }
        guard (1...200).contains(code.title.count),
            code.title.utf8.count <= ProductCatalogueRequest.maximumTitleBytes, DisplayText.isShown(code.title)
        else {
            return
                "the title of \(code.code) must be 1–200 characters (at most \(ProductCatalogueRequest.maximumTitleBytes) bytes) without control, bidirectional or invisible formatting characters"
        }
        return nil
    }

    /// Whether `code`'s namespace is Homeport's in some spelling: its first part, without `.`,
    /// `_` and `-`, with the digits that pass for letters read as them (`h0me-port`) and `rn` as
    /// `m` (`hornep0rt`), starts with `homeport` (`homeport:x`, `homeport/core/evil:x`, `home.port:x`). A product key's codes
    /// are never in it; the operator's catalogue and a Swift product's, which are the
    /// installation's own, may be.
    package static func isReserved(_ code: String) -> Bool {
        let namespace = code.split(separator: ":", maxSplits: 1).first ?? ""
        let first = namespace.split(separator: "/", omittingEmptySubsequences: false).first ?? ""
        let lookalikes: [Character: Character] = ["0": "o", "3": "e", "7": "t"]
        let read = String(first.filter { !".-_".contains($0) }.map { lookalikes[$0] ?? $0 })
            .replacingOccurrences(of: "rn", with: "m")
        return read.hasPrefix("homeport")
    }

    /// `namespace:name`: lowercase letters, digits, `.`, `_`, `-` and `/` in the namespace; 3–128 characters.
    package static func isCode(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (3...128).contains(text.utf8.count), !parts[0].isEmpty, !parts[1].isEmpty else {
            return false
        }
        let allowed = { (byte: UInt8, slash: Bool) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                || (slash && byte == UInt8(ascii: "/"))
        }
        return parts[0].utf8.allSatisfy { allowed($0, true) } && parts[1].utf8.allSatisfy { allowed($0, false) }
    }
}
