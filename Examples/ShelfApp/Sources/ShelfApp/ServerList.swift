import HomeportClient
import ShelfKit
import SwiftUI

/// The server switcher: each server by its label (or product and id), and whether this phone is
/// signed in there. Selections are handles, which stay when a server's identity is reset.
struct ServerList: View {
    let shelf: Shelf
    @State private var renaming: ServerRecord?
    @State private var label = ""

    var body: some View {
        List(selection: selection) {
            ForEach(shelf.servers, id: \.localID) { record in
                VStack(alignment: .leading) {
                    Text(Shelf.name(of: record)).font(.headline)
                    Text(record.signedOut || record.email.isEmpty ? "Signed out" : record.email)
                        .font(.caption).foregroundStyle(.secondary)
                }
                .tag(record.localID)
                .contextMenu {
                    Button("Rename…") {
                        label = record.label ?? ""
                        renaming = record
                    }
                    Button("Remove", role: .destructive) {
                        Task { await shelf.remove(record.localID) }
                    }
                }
            }
        }
        .navigationTitle("Libraries")
        .alert("Name this library", isPresented: renamingShown, presenting: renaming) { record in
            TextField("Home library", text: $label)
            Button("Save") { shelf.rename(record.localID, to: label) }
            Button("Cancel", role: .cancel) {}
        }
    }

    private var selection: Binding<UUID?> {
        Binding(get: { shelf.selection }, set: { handle in Task { await shelf.select(handle) } })
    }

    private var renamingShown: Binding<Bool> {
        Binding(get: { renaming != nil }, set: { if !$0 { renaming = nil } })
    }
}
