//! Netlink XFRM_MSG_GETPOLICY dump replies (what the kernel sends for
//! `ip xfrm policy`), parsed into policies, each policy's selector matched
//! against a flow (the arithmetic `ipsec.xfrm` judges with), and
//! `ipsec.policy`'s judgement of what they cover (the kernel's choice of
//! policy by priority and mark, the peers taken from the policies
//! themselves).
#![no_main]

use libfuzzer_sys::fuzz_target;
use spx_checks::checks::ipsec_policy::{analyse, describe, effective, PolicyFacts};
use spx_checks::checks::ipsec_xfrm::PeerView;
use spx_checks::facts::xfrm::{parse_policy_dump, PolicyDir, Port, IPPROTO_UDP};

fuzz_target!(|data: &[u8]| {
    if let Ok(chunk) = parse_policy_dump(data) {
        for p in &chunk.policies {
            let s = &p.selector;
            let _ = s.selects(s.src, s.dst, IPPROTO_UDP, Port::Any, Port::Is(6081));
            let _ = s.ports_text();
            let _ = p.requires(50);
            let _ = describe(p);
            let _ = effective(&chunk.policies, PolicyDir::Out, s.src, s.dst);
        }
        let Some(first) = chunk.policies.first() else {
            return;
        };
        let facts = PolicyFacts {
            ipsec_wanted: data.len() % 2 == 0,
            node_count: 3,
            states: Vec::new(),
            policies: chunk.policies.clone(),
            peers: PeerView::Unknown {
                why: "fuzzing".into(),
            },
            local_addresses: vec![first.selector.src],
        };
        let a = analyse(&facts);
        assert!(a.geneve_policies <= a.policy_count);
        assert!(a.policy_count <= chunk.policies.len());
    }
});
