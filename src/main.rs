fn main() {
    let cfg = glint::config::Config::from_settings(Default::default());
    println!("{:?}", cfg.listeners);
}
