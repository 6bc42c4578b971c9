import Foundation
import HomeportWire
import Testing

@testable import HomeportClient

@Suite("Errors an app can show: what happened and what to do, in its user's words")
struct ErrorPresentationTests {
    private static let id = InstanceID("6f1c2a7e-0b3d-4c5e-8f90-123456789abc")!

    /// One of each case (``covered(_:)`` fails to compile when a case is added and not listed).
    private static let clientErrors: [ClientError] = [
        .invalidAddress("nope"), .plainHTTPNotAllowed("http://192.168.1.20"),
        .identityMismatch(address: "https://a.example", seen: id),
        .probeFailed(address: "https://a.example", outcome: "a wrong signature"),
        .addressNotApplicable("https://a.example is already the primary address"),
        .notHomeport(address: "https://a.example", detail: "404"),
        .notAnAPI(address: "https://a.example", answer: "an HTML page"),
        .sessionKept(address: "https://a.example", detail: "answered 401 without the API's envelope"),
        .alternativeDisowned(address: "https://b.example", seen: id),
        .claimNotConfirmed(address: "https://c.example", server: "Books", detail: "no answer"),
        .signInNotKept(.vault("disk full"), sessionEnded: true),
        .unsafeDirectory(path: "/tmp/x", reason: "others can write it"),
        .offHostRedirect(address: "https://a.example", target: "https://evil.example"),
        .unreachable(address: "https://a.example", reason: "connection refused"),
        .tooLarge(address: "https://a.example", limit: 1 << 20),
        .noVerifiedAddress(server: "Books", detail: "2 addresses tried"), .signedOut(server: "Books"),
        .rejected(
            status: 400, errors: [AuthFieldError(code: "incorrect_code", param: "code", message: "Incorrect code.")]),
        .refused(
            address: "https://a.example", status: 409, code: "conflict", message: "The shelf is full.", field: nil),
        .invalidInput("a thread name has at most 128 characters"),
        .badAnswer(address: "https://a.example", detail: "not JSON"), .unknownServer("bo"),
        .ambiguousServer("b", candidates: ["books", "bikes"]), .vault("the keyring is locked"),
    ]

    private static func covered(_ error: ClientError) -> Int {
        switch error {
        case .invalidAddress: 0
        case .plainHTTPNotAllowed: 1
        case .identityMismatch: 2
        case .probeFailed: 3
        case .addressNotApplicable: 4
        case .notHomeport: 5
        case .notAnAPI: 6
        case .sessionKept: 7
        case .alternativeDisowned: 8
        case .claimNotConfirmed: 9
        case .signInNotKept: 10
        case .unsafeDirectory: 11
        case .offHostRedirect: 12
        case .unreachable: 13
        case .tooLarge: 14
        case .noVerifiedAddress: 15
        case .signedOut: 16
        case .rejected: 17
        case .refused: 18
        case .invalidInput: 19
        case .badAnswer: 20
        case .unknownServer: 21
        case .ambiguousServer: 22
        case .vault: 23
        }
    }

    /// A sentence for a person: a capital, a full stop, and none of the command line's words.
    private func readable(_ text: String?, _ context: String) {
        guard let text else {
            Issue.record("nothing for \(context)")
            return
        }
        #expect(text.first?.isUppercase == true && text.hasSuffix("."), "\(context): \(text)")
        #expect(!text.contains("--") && !text.contains("homeport "), "no CLI words for an app: \(text)")
    }

    @Test("every ClientError says what happened, and nearly every one what to do; localizedDescription is that")
    func clientErrors() {
        #expect(Set(Self.clientErrors.map(Self.covered)) == Set(0...23), "one of each case")
        for error in Self.clientErrors {
            readable(error.errorDescription, "\(error)")
            #expect(error.localizedDescription == error.errorDescription)
            #expect(!error.localizedDescription.contains("operation could not be completed"))
            switch error {
            case .addressNotApplicable, .rejected, .refused, .invalidInput:
                // The server's or the caller's own words say it all.
                #expect(error.recoverySuggestion == nil)
            default: readable(error.recoverySuggestion, "recovery of \(error)")
            }
            #expect(!error.description.contains("--") && !error.description.contains("'homeport "), "\(error)")
        }
    }

    @Test("a server's words shown to the user are cleaned of terminal and bidi controls")
    func serverWordsCleaned() {
        let error = ClientError.refused(
            address: "https://a.example", status: 409, code: "x", message: "Full\u{1B}[2J\u{202E}.", field: nil)
        #expect(error.errorDescription == "Full[2J.")
    }

    @Test("every push routing failure says so in the user's words; one server enrolled is not '1 servers'")
    func pushFailures() {
        let failures: [PushRoutingFailure] = [
            .unreadable("not JSON"), .noAppData(key: "homeport"), .unknownServer(Self.id),
            .unattributable(enrolled: 0), .unattributable(enrolled: 1), .unattributable(enrolled: 2),
            .threadOfAnotherServer(Self.id), .ambiguous,
        ]
        for failure in failures {
            readable(failure.errorDescription, "\(failure)")
            readable(failure.recoverySuggestion, "recovery of \(failure)")
            #expect(failure.localizedDescription == failure.errorDescription)
        }
        #expect(!PushRoutingFailure.unattributable(enrolled: 1).description.contains("1 servers"))
        #expect(PushRoutingFailure.unattributable(enrolled: 1).description.contains("names itself"))
        #expect(PushRoutingFailure.unattributable(enrolled: 0).description.contains("no server is enrolled"))
    }
}
