//! Running a graph now, without instantiating it: on the CPU in recording order; on CUDA over
//! a few streams, independent nodes on different streams, each dependency across streams one
//! event.
//!
//! The stream plan (`plan`) is a pure function of the edges, tested without a GPU. A node
//! continues the stream of a predecessor that was the last node there (a chain stays on one
//! stream, with no events); otherwise it opens another stream while there are any left. Lane 0
//! is the thread's current stream, so the graph is ordered after the work already queued there
//! (the uploads that fed it), and that stream waits for every other lane's end before it goes
//! on.

use super::deps::Edge;
use super::Graph;
use crate::error::{Error, Result};
use crate::tensor::Device;

/// Where each node runs and which events join the lanes.
#[derive(Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) struct Plan {
    /// Each node's lane (0: the thread's current stream).
    pub(crate) lane: Vec<usize>,
    /// Per node, the predecessors on other lanes whose events it waits for.
    pub(crate) waits: Vec<Vec<usize>>,
    /// Per node, whether an event is recorded after it.
    pub(crate) record: Vec<bool>,
    pub(crate) lanes: usize,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn plan(nodes: usize, edges: &[Edge], max_lanes: usize) -> Plan {
    let max_lanes = max_lanes.max(1);
    let mut preds = vec![Vec::new(); nodes];
    for e in edges {
        if let Some(p) = preds.get_mut(e.to.index()) {
            p.push(e.from.index());
        }
    }
    let mut lane = vec![0; nodes];
    let mut waits = vec![Vec::new(); nodes];
    let mut record = vec![false; nodes];
    let mut last: Vec<Option<usize>> = Vec::new();
    for j in 0..nodes {
        let continued = preds[j]
            .iter()
            .map(|&i| lane[i])
            .find(|&l| last[l].is_some_and(|k| preds[j].contains(&k)));
        let l = match continued {
            Some(l) => l,
            None if last.len() < max_lanes => {
                last.push(None);
                last.len() - 1
            }
            // Out of lanes: any lane is correct (the waits order it), this one spreads work.
            None => j % max_lanes,
        };
        for &i in &preds[j] {
            if lane[i] != l && !waits[j].contains(&i) {
                waits[j].push(i);
                record[i] = true;
            }
        }
        lane[j] = l;
        last[l] = Some(j);
    }
    Plan {
        lane,
        waits,
        record,
        lanes: last.len(),
    }
}

impl Graph {
    /// Runs the graph once, now. On the CPU (DSL kernels' CPU builds) the nodes run in
    /// recording order. On CUDA they are queued on the thread's current stream and up to
    /// `opbox::cuda::POOL_STREAMS - 1` pool streams, joined by events; the current stream
    /// waits for all of it, so later work there sees the results.
    pub fn launch(&self) -> Result<()> {
        match self.device {
            Device::Cpu => self.nodes.iter().try_for_each(|n| {
                n.members.iter().try_for_each(|m| {
                    crate::kernel::launch(m.handle, &m.cfg, &m.launch_args(), &m.constexprs)
                })
            }),
            #[cfg(feature = "cuda")]
            Device::Cuda(ordinal) => cuda::run(self, ordinal as usize),
            device => Err(Error::Graph {
                graph: self.name.clone(),
                message: format!("cannot run a graph on {device}"),
            }),
        }
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use cudarc::driver::{CudaEvent, DriverError};

    use super::{plan, Graph};
    use crate::backend::cuda::current::{cuda_stream_for, stream_from_pool, POOL_STREAMS};
    use crate::error::{Error, Result};
    use crate::kernel::Stream;

    pub(super) fn run(g: &Graph, ordinal: usize) -> Result<()> {
        let plan = plan(g.nodes.len(), g.edges(), POOL_STREAMS);
        let fail = |what: &str, e: DriverError| Error::Graph {
            graph: g.name.clone(),
            message: format!("{what} on cuda:{ordinal}: {e}"),
        };
        let origin = cuda_stream_for(ordinal)?;
        let mut lanes = vec![Stream::from_cuda(origin.clone())];
        for _ in 1..plan.lanes {
            lanes.push(stream_from_pool(ordinal)?);
        }
        let cuda = |s: &Stream| {
            s.as_cuda().cloned().ok_or_else(|| Error::Graph {
                graph: g.name.clone(),
                message: "a pool stream is not a CUDA stream".into(),
            })
        };
        let streams = lanes.iter().map(cuda).collect::<Result<Vec<_>>>()?;
        if plan.lanes > 1 {
            let start = origin
                .record_event(None)
                .map_err(|e| fail("recording the start event", e))?;
            for s in &streams[1..] {
                s.wait(&start).map_err(|e| fail("joining a stream", e))?;
            }
        }
        let mut events: Vec<Option<CudaEvent>> = (0..g.nodes.len()).map(|_| None).collect();
        for (j, node) in g.nodes.iter().enumerate() {
            let l = plan.lane[j];
            let (lane, stream) = (&lanes[l], &streams[l]);
            for &i in &plan.waits[j] {
                if let Some(e) = &events[i] {
                    stream
                        .wait(e)
                        .map_err(|e| fail("waiting for an event", e))?;
                }
            }
            for m in &node.members {
                let cfg = m.cfg.clone().stream(lane.clone());
                crate::kernel::launch(m.handle, &cfg, &m.launch_args(), &m.constexprs)?;
            }
            if plan.record[j] {
                let e = stream
                    .record_event(None)
                    .map_err(|e| fail("recording an event", e))?;
                events[j] = Some(e);
            }
        }
        for s in &streams[1..] {
            let end = s
                .record_event(None)
                .map_err(|e| fail("recording a stream's end", e))?;
            origin
                .wait(&end)
                .map_err(|e| fail("joining the streams", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::deps::{Edge, Hazards};
    use super::super::NodeId;
    use super::plan;

    fn edges(pairs: &[(usize, usize)]) -> Vec<Edge> {
        pairs
            .iter()
            .map(|&(from, to)| Edge {
                from: NodeId(from),
                to: NodeId(to),
                hazards: Hazards {
                    raw: true,
                    ..Hazards::default()
                },
            })
            .collect()
    }

    #[test]
    fn chain_stays_on_one_stream() {
        let p = plan(4, &edges(&[(0, 1), (1, 2), (2, 3)]), 8);
        assert_eq!(p.lane, [0, 0, 0, 0]);
        assert!(p.waits.iter().all(Vec::is_empty) && p.record.iter().all(|r| !r));
        assert_eq!(p.lanes, 1);
    }

    #[test]
    fn diamond_forks_and_joins() {
        let p = plan(4, &edges(&[(0, 1), (0, 2), (1, 3), (2, 3)]), 8);
        assert_eq!(p.lane, [0, 0, 1, 0]);
        assert_eq!(p.waits, [vec![], vec![], vec![0], vec![2]]);
        assert_eq!(p.record, [true, false, true, false]);
    }

    #[test]
    fn independent_nodes_spread_then_wrap() {
        let p = plan(5, &[], 2);
        assert_eq!(p.lanes, 2);
        assert_eq!(p.lane, [0, 1, 0, 1, 0]);
    }
}
