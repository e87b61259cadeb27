fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lang: tree_sitter::Language = if args[1] == "bash" { tree_sitter_bash::LANGUAGE.into() } else { tree_sitter_python::LANGUAGE.into() };
    let mut p = tree_sitter::Parser::new();
    p.set_language(&lang).unwrap();
    let t = p.parse(&args[2], None).unwrap();
    println!("{}", t.root_node().to_sexp());
}
