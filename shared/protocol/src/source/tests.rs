use super::*;

fn cookie(name: &str, line: u8) -> Cookie {
    Cookie {
        name: name.into(),
        line,
    }
}

fn declared(name: &str, line: u8, codec: Codec) -> SourceEncoding {
    SourceEncoding::Declared {
        cookie: cookie(name, line),
        codec,
    }
}

fn plain_utf8() -> SourceEncoding {
    SourceEncoding::Utf8 {
        bom: false,
        cookie: None,
    }
}

#[test]
fn the_emacs_form_names_utf_7() {
    assert_eq!(
        python_source_encoding(b"# -*- coding: utf-7 -*-\nprint(1)\n"),
        declared("utf-7", 1, Codec::Other)
    );
}

#[test]
fn the_vim_form_names_latin_1_normalised_as_the_tokenizer_does() {
    assert_eq!(
        python_source_encoding(b"# vim: set fileencoding=latin-1 :\nx = 1\n"),
        declared("iso-8859-1", 1, Codec::Latin1)
    );
}

#[test]
fn coding_equals_unicode_escape_is_a_cookie() {
    assert_eq!(
        python_source_encoding(b"# coding=unicode_escape\n# \\u000aprint(1)\n"),
        declared("unicode_escape", 1, Codec::Other)
    );
}

#[test]
fn a_cookie_on_line_2_after_a_shebang_counts() {
    assert_eq!(
        python_source_encoding(b"#!/usr/bin/env python3\n# -*- coding: utf-7 -*-\nx = 1\n"),
        declared("utf-7", 2, Codec::Other)
    );
    // After a blank first line too, and whatever ends the lines.
    assert_eq!(
        python_source_encoding(b"\r\n# coding: latin-1\r\n"),
        declared("iso-8859-1", 2, Codec::Latin1)
    );
    assert_eq!(
        python_source_encoding(b"#!x\r# coding: latin-1\rw = 1\r"),
        declared("iso-8859-1", 2, Codec::Latin1)
    );
}

#[test]
fn a_cookie_on_line_3_is_ignored() {
    assert_eq!(
        python_source_encoding(b"#!/usr/bin/env python3\n\n# -*- coding: utf-7 -*-\nx = 1\n"),
        plain_utf8()
    );
}

#[test]
fn a_cookie_after_code_on_line_1_is_not_a_cookie_and_ends_the_search() {
    assert_eq!(python_source_encoding(b"x = 1  # coding: utf-7\ny = 2\n"), plain_utf8());
    // Code on line 1 also stops the search before line 2.
    assert_eq!(python_source_encoding(b"x = 1\n# coding: utf-7\n"), plain_utf8());
}

#[test]
fn a_byte_order_mark_with_a_latin_1_cookie_is_refused_as_cpython_refuses_it() {
    assert_eq!(
        python_source_encoding(b"\xef\xbb\xbf# coding: latin-1\nx = 1\n"),
        SourceEncoding::Invalid(Undecodable::BomConflict {
            name: "iso-8859-1".into(),
            line: 1
        })
    );
    // `utf8` is not normalised by the tokenizer: with a mark it is a conflict as well.
    assert!(matches!(
        python_source_encoding(b"\xef\xbb\xbf#!py\n# coding: utf8\n"),
        SourceEncoding::Invalid(Undecodable::BomConflict { line: 2, .. })
    ));
    // A mark with a UTF-8 cookie (any spelling the tokenizer normalises) is UTF-8.
    assert_eq!(
        python_source_encoding(b"\xef\xbb\xbf# coding: UTF_8-sig\nx = 1\n"),
        SourceEncoding::Utf8 {
            bom: true,
            cookie: Some(cookie("utf-8", 1))
        }
    );
}

#[test]
fn the_text_is_what_the_codec_gives() {
    let latin = b"# coding: latin-1\nw = '\xc3\xa9'\n";
    let encoding = python_source_encoding(latin);
    assert_eq!(encoding.text(latin).unwrap(), "# coding: latin-1\nw = '\u{c3}\u{a9}'\n");
    let bom = b"\xef\xbb\xbfx = '\xc3\xa9'\n";
    assert_eq!(python_source_encoding(bom).text(bom).unwrap(), "x = '\u{e9}'\n");
    let utf7 = b"# coding: utf-7\n# +AAo-print(1)\n";
    assert!(matches!(
        python_source_encoding(utf7).text(utf7),
        Err(SourceRefusal::UnsupportedEncoding(Cookie { ref name, line: 1 })) if name == "utf-7"
    ));
}

#[test]
fn what_cpython_refuses_is_invalid_with_its_line() {
    assert_eq!(
        python_source_encoding(b"x = 1\n\0\n"),
        SourceEncoding::Invalid(Undecodable::NulByte { line: 2 })
    );
    assert_eq!(
        python_source_encoding(b"x = 1\ny = '\xff'\n"),
        SourceEncoding::Invalid(Undecodable::NotUtf8 { line: 2 })
    );
    assert_eq!(
        python_source_encoding(b"# coding: ascii\n\nw = '\xc3'\n"),
        SourceEncoding::Invalid(Undecodable::NotAscii { line: 3, byte: 0xc3 })
    );
}

#[test]
fn codec_aliases_resolve_as_pythons_registry_resolves_them() {
    for (name, codec) in [
        ("utf8", Codec::Utf8),
        ("U8", Codec::Utf8),
        ("latin1", Codec::Latin1),
        ("L1", Codec::Latin1),
        ("iso8859-1", Codec::Latin1),
        ("cp819", Codec::Latin1),
        ("us-ascii", Codec::Ascii),
        ("ANSI_X3.4-1968", Codec::Ascii),
        ("646", Codec::Ascii),
        ("utf-7", Codec::Other),
        ("cp1252", Codec::Other),
        ("latin-2", Codec::Other),
    ] {
        assert_eq!(codec_of(name), codec, "{name}");
    }
}

/// Each sample is compiled by the real interpreter, which reports what two probe strings
/// decode to; the encoding found here must predict exactly that (or the refusal).
#[test]
fn cpython_decodes_every_sample_as_predicted() {
    // `v` tells UTF-7 from the rest; `w` tells UTF-8, Latin-1 and ASCII apart.
    let probe = b"v = '+AGE-'\nw = '\xc3\xa9'\n";
    let ascii_probe = b"v = '+AGE-'\n";
    let heads: &[&[u8]] = &[
        b"# -*- coding: utf-7 -*-\n",
        b"# vim: set fileencoding=latin-1 :\n",
        b"#!/usr/bin/env python3\n# coding: latin-1\n",
        b"#!/usr/bin/env python3\n\n# coding: latin-1\n",
        b"x = 1  # coding: latin-1\n",
        b"x = 1\n# coding: latin-1\n",
        b"\n# coding: latin-1\n",
        b"  \t\x0c\n# coding: latin-1\n",
        b"\x0c# coding: latin-1\n",
        b"\t # coding: latin-1\n",
        b"# Coding: latin-1\n",
        b"# encoding: latin-1\n",
        b"# coding:   \tlatin-1\n",
        b"#coding:l1\n",
        b"# coding: , coding: latin-1\n",
        b"# coding: latin-1 coding: utf-7\n",
        b"# coding: latin-1-whatever\n",
        b"# coding: utf-8-whatever\n",
        b"# coding: UTF_8\n",
        b"# coding: utf8\n",
        b"# coding: latin1\n",
        b"# coding: iso_8859_1\n",
        b"# coding: ascii\n",
        b"# coding: us-ascii\n",
        b"#!x\r# coding: latin-1\r",
        b"#!x\r\n# coding: latin-1\r\n",
        b"\xef\xbb\xbf# coding: latin-1\n",
        b"\xef\xbb\xbf# coding: utf-8\n",
        b"\xef\xbb\xbf# coding: utf8\n",
        b"\xef\xbb\xbf#!py\n# coding: latin-1\n",
        b"\xef\xbb\xbf",
        b"",
        b"# plain comment\n",
        b"# coding: klingon\n",
        b"# coding: hex\n",
        b"x = 1\n\0\n",
    ];
    let mut samples: Vec<Vec<u8>> = Vec::new();
    for head in heads {
        samples.push([*head, &probe[..]].concat());
        samples.push([*head, &ascii_probe[..]].concat());
    }
    let expected: Vec<String> = samples.iter().map(|s| predicted(s)).collect();
    let observed = run_in_cpython(&samples);
    for ((sample, want), got) in samples.iter().zip(&expected).zip(&observed) {
        assert_eq!(want, got, "sample {:?}", String::from_utf8_lossy(sample));
    }
}

/// What compiling `sample` gives, as the probe reports it: `error`, or `v|w` (`-` when unset).
fn predicted(sample: &[u8]) -> String {
    let encoding = python_source_encoding(sample);
    let text = match (&encoding, encoding.text(sample)) {
        (_, Ok(text)) => text.into_owned(),
        (SourceEncoding::Declared { cookie, .. }, Err(_)) if cookie.name == "utf-7" => {
            // The one other codec in the samples, decoded by hand for the probe.
            return if sample.ends_with(b"w = '\xc3\xa9'\n") {
                "error".into()
            } else {
                "a|-".into()
            };
        }
        (_, Err(_)) => return "error".into(),
    };
    let value = |name: &str| {
        text.split(['\n', '\r'])
            .find_map(|l| l.strip_prefix(&format!("{name} = '")))
            .and_then(|rest| rest.strip_suffix('\''))
            .map_or("-".to_owned(), str::to_owned)
    };
    format!("{}|{}", value("v"), value("w"))
}

fn run_in_cpython(samples: &[Vec<u8>]) -> Vec<String> {
    use std::io::Write as _;
    const PROBE: &str = r#"
import sys, json
out = []
for hexed in json.load(sys.stdin):
    try:
        g = {}
        exec(compile(bytes.fromhex(hexed), "main.py", "exec"), g)
        out.append(g.get("v", "-") + "|" + g.get("w", "-"))
    except (SyntaxError, ValueError):
        out.append("error")
json.dump(out, sys.stdout)
"#;
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| std::process::Command::new(p).arg("-V").output().is_ok())
        .expect("python3 is needed to check the decoding against CPython (apt-get install python3)");
    let mut child = std::process::Command::new(python)
        .args(["-I", "-c", PROBE])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let hexed: Vec<String> = samples.iter().map(hex::encode).collect();
    let input = serde_json::to_vec(&hexed).expect("samples encode");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("samples sent");
    let output = child.wait_with_output().expect("python3 ends");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the probe's answer")
}
