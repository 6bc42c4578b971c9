import Foundation
import HomeportWire

extension ClientResponse {
    /// Whether the content type is JSON's (`application/json`, parameters allowed), and only that.
    var isJSON: Bool {
        guard let type = headers["content-type"] else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }
}
