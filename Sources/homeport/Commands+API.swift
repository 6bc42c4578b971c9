import Foundation
import HomeportClient
import HomeportCommandLine

extension Commands {
    static let apiSpec: CommandSpec = {
        var spec = CommandSpec(
            name: "homeport api",
            summary: "Call any route of SERVER's API (a product's own, say) with this device's session.",
            arguments: [
                serverArgument,
                .init("[METHOD]", help: "GET (the default; POST with --data), HEAD, POST, PUT, PATCH or DELETE."),
                .init("PATH", help: "The route, such as /api/v1/books."),
            ],
            options: [
                .value(
                    "data", "JSON|-",
                    help: "Send this JSON body ('-' reads it from standard input); it must parse as JSON."),
                .flag("json", help: "Print JSON: {server, method, path, status, via, contentType, body}."), proxyOption,
                caFileOption,
            ],
            discussion: """
                The request goes through the address chosen on this network, as every command's: the session token is
                sent only to an address that answered as the enrolled installation on this path (or to the primary,
                when no alternative has). Without --json the answer's body is printed as it came (JSON indented),
                with terminal controls removed.
                Exit codes: 0 for a 2xx or 3xx answer, 5 for a 4xx, 6 for a 5xx; 1 when no address answered, 3 when
                refused for safety (nothing was sent, or not the API), 4 when the API refused the session (signed out).

                Examples:
                  homeport api 6f1c /api/v1/books
                  homeport api 6f1c POST /api/v1/books --data '{"title": "Dune"}'
                  echo '{"title": "Dune"}' | homeport api 6f1c POST /api/v1/books --data -
                """)
        spec.optionalArguments = 1
        return spec
    }()

    static let apiMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

    static func api(_ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(apiSpec, arguments) else { return 0 }
        var words = Array(parsed.positionals.dropFirst())
        let server = parsed.positionals[0]
        var method = parsed.options["data"] == nil ? "GET" : "POST"
        if words.count == 2 {
            method = words[0].uppercased()
            guard apiMethods.contains(method) else {
                throw UsageError("'\(words[0])' is not a method; use " + apiMethods.sorted().joined(separator: ", "))
            }
            words.removeFirst()
        }
        guard let path = words.first else { throw UsageError("api needs SERVER, then PATH or METHOD PATH") }
        guard path.hasPrefix("/"), !path.hasPrefix("//") else {
            throw UsageError("PATH starts with a single /, such as /api/v1/books: not '\(path)'")
        }
        var body: Data?
        if let data = parsed.options["data"] {
            guard method != "GET" && method != "HEAD" else {
                throw UsageError("a \(method) sends no body; drop --data")
            }
            let text =
                data == "-" ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) : data
            guard (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil else {
                throw UsageError("--data is not JSON; nothing was sent")
            }
            body = Data(text.utf8)
        }
        let client = try client(environment, parsed)
        let record = try client.directory.find(server)
        let answer = try await client.send(method, path, to: record.key, json: body)
        let response = answer.response
        let contentType = response.headers["content-type"] ?? ""
        let decoded =
            response.isJSON ? try? JSONSerialization.jsonObject(with: response.body, options: [.fragmentsAllowed]) : nil
        if parsed.flag("json") {
            try printJSON([
                "server": record.key, "method": method, "path": path, "status": response.status, "via": answer.via.url,
                "contentType": contentType,
                "body": decoded ?? (response.body.isEmpty ? NSNull() : String(decoding: response.body, as: UTF8.self)),
            ])
        } else if let decoded, JSONSerialization.isValidJSONObject(decoded) {
            try printJSON(decoded)
        } else if !response.body.isEmpty {
            say(String(decoding: response.body, as: UTF8.self))
        }
        switch response.status {
        case 400..<500: return 5
        case 500...: return 6
        default: return 0
        }
    }
}
